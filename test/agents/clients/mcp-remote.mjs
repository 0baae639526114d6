// `mcp-remote`, the stdio bridge Claude Desktop runs for a remote server, started as Claude Desktop starts
// it (a child process speaking MCP on stdin/stdout) and driven by the official SDK's stdio client. What the
// host gets is the bridged `tools/call` result: `isError`, `content` (the text a chat client shows the
// model) and `structuredContent`.

import { mkdtempSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { run, settings } from './scenario.mjs';

const { url, token } = settings();
const bridge = createRequire(import.meta.url).resolve('mcp-remote/dist/proxy.js');
const transport = new StdioClientTransport({
  command: process.execPath,
  // Claude Desktop's documented form: mcp-remote itself puts the environment's value in for ${AUTH_HEADER},
  // so no argument holds a space (which Claude Desktop on Windows mangles).
  // biome-ignore lint/suspicious/noTemplateCurlyInString: a placeholder mcp-remote expands, not a template
  args: [bridge, url, '--header', 'Authorization:${AUTH_HEADER}'],
  env: {
    ...process.env,
    AUTH_HEADER: `Bearer ${token}`,
    // Its OAuth state (none is needed with a bearer header) in a throwaway folder, not ~/.mcp-auth.
    MCP_REMOTE_CONFIG_DIR: mkdtempSync(join(tmpdir(), 'retrysafe-mcp-remote-')),
  },
  stderr: 'pipe',
});
let log = '';
transport.stderr?.on('data', (chunk) => {
  log += chunk;
});
const client = new Client({ name: 'retrysafe-test', version: '1.0.0' });
try {
  await client.connect(transport);
} catch (error) {
  throw new Error(`mcp-remote did not start: ${error}\n${log}`);
}

await run({
  tools: async () => (await client.listTools()).tools.map((tool) => tool.name),
  async see(name, args) {
    const { isError, content, structuredContent } = await client.callTool({ name, arguments: args });
    return { isError, content, structuredContent };
  },
  close: () => client.close(),
});
