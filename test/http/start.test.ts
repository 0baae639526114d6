import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { DynamoDBClient, ListTablesCommand } from '@aws-sdk/client-dynamodb';
import { freePort } from '../../lib/local/free-port';

const run = promisify(execFile);

/** `npm start`'s program as its own process (one Node process, so a signal reaches the server itself). */
function start(env: NodeJS.ProcessEnv): {
  server: ChildProcess;
  ready: Promise<{ url: string; dynamodbPort: string; accessKey: string }>;
} {
  const server = spawn(process.execPath, ['--import', 'tsx', 'lib/cli/bin.ts', 'dev'], {
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  started.push(server);
  let output = '';
  const ready = new Promise<{ url: string; dynamodbPort: string; accessKey: string }>((resolve, reject) => {
    server.stdout?.on('data', (chunk: Buffer) => {
      output += chunk.toString();
      const url = /REST {2}(\S+)\/tools\/<name>/.exec(output)?.[1];
      const dynamodbPort = /DynamoDB Local http:\/\/127\.0\.0\.1:(\d+)/.exec(output)?.[1];
      if (url && dynamodbPort) {
        // The operations commands find its store in the state file it writes beside the dev key.
        const state = JSON.parse(readFileSync(join(env.DEV_KEY_DIR!, 'dev-store.json'), 'utf8')) as {
          accessKeyId: string;
        };
        resolve({ url, dynamodbPort, accessKey: state.accessKeyId });
      }
    });
    server.once('exit', (code) => reject(new Error(`server exited with ${code}: ${output}`)));
  });
  return { server, ready };
}

/** Pids of Java processes serving DynamoDB Local on `port` (argv[0] is java, not its watchdog shell). */
function javaOn(port: string): string[] {
  return readdirSync('/proc')
    .filter((pid) => /^\d+$/.test(pid))
    .filter((pid) => {
      try {
        const argv = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
        return argv[0] === 'java' && argv[argv.indexOf('-port') + 1] === port;
      } catch {
        return false; // gone meanwhile
      }
    });
}

/** The status of `GET /health` sent with this Host header (fetch would send the URL's own). */
function statusWithHost(url: string, host: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const request = httpRequest(`${url}/health`, { headers: { host } }, (response) => {
      response.resume();
      resolve(response.statusCode ?? 0);
    });
    request.on('error', reject);
    request.end();
  });
}

/** The tables a client with this access key sees on DynamoDB Local's port. */
async function tablesSeenWith(port: string, accessKeyId: string): Promise<string[]> {
  const client = new DynamoDBClient({
    endpoint: `http://127.0.0.1:${port}`,
    region: 'us-east-1',
    credentials: { accessKeyId, secretAccessKey: 'anything' },
  });
  try {
    return (await client.send(new ListTablesCommand({}))).TableNames ?? [];
  } finally {
    client.destroy();
  }
}

async function until(condition: () => boolean, timeoutMs: number): Promise<boolean> {
  const end = Date.now() + timeoutMs;
  while (Date.now() < end) {
    if (condition()) return true;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return condition();
}

const started: ChildProcess[] = [];
afterEach(() => {
  // Whatever a failed assertion left running.
  for (const server of started.splice(0)) if (server.exitCode === null) server.kill('SIGKILL');
});

describe('npm start (retrysafe dev over the example config)', () => {
  // Its own DynamoDB Local and its own dev key, as on a fresh checkout.
  const { DYNAMODB_ENDPOINT: _shared, ...baseEnv } = process.env;
  const env = { ...baseEnv, DEV_KEY_DIR: mkdtempSync(join(tmpdir(), 'retrysafe-start-')) };
  /** Access keys the runs used, in order. */
  const accessKeys: string[] = [];

  it('serves the API with tokens from npm run token, and Ctrl-C stops it and DynamoDB Local', async () => {
    // PORT, as a user sets it for both commands: the issuer both agree on is the server's URL.
    const portEnv = { ...env, PORT: String(await freePort()), ALLOWED_HOSTS: 'tunnel.example' };
    const { server, ready } = start(portEnv);
    const { url, dynamodbPort, accessKey } = await ready;
    accessKeys.push(accessKey);
    const { stdout: token } = await run(
      process.execPath,
      ['--import', 'tsx', 'lib/cli/bin.ts', 'token', '--tenant', 'acme', '--user', 'ada'],
      { env: portEnv },
    );

    const health = await fetch(`${url}/health`);
    const tools = await fetch(`${url}/tools`, { headers: { authorization: `Bearer ${token.trim()}` } });
    const metadata = (await (await fetch(`${url}/.well-known/oauth-protected-resource/mcp`)).json()) as {
      authorization_servers: string[];
    };
    const mcp = await fetch(`${url}/mcp`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${token.trim()}`,
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
      },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
    });
    const tunneled = await statusWithHost(url, 'tunnel.example');
    const foreign = await statusWithHost(url, 'evil.example');
    // A peer on the network reaching DynamoDB Local's port with the project's old default key.
    const peerTables = await tablesSeenWith(dynamodbPort, 'local');
    const ownTables = await tablesSeenWith(dynamodbPort, accessKey);
    const stopped = new Promise<number | null>((resolve) => server.once('exit', resolve));
    server.kill('SIGINT');

    expect(token).toMatch(/^[\w-]+\.[\w-]+\.[\w-]+\n$/); // the token, and nothing else
    expect(url).toBe(`http://127.0.0.1:${portEnv.PORT}`);
    expect(health.status).toBe(200);
    expect(tools.status).toBe(200);
    expect(metadata.authorization_servers).toEqual([url]);
    expect(mcp.status).toBe(200);
    expect([tunneled, foreign]).toEqual([200, 403]);
    expect(accessKey).toMatch(/^[0-9a-f]{32}$/);
    expect(ownTables.length).toBeGreaterThan(0);
    expect(peerTables).toEqual([]);
    expect(await stopped).toBe(0);
    expect(await until(() => javaOn(dynamodbPort).length === 0, 10_000)).toBe(true);
    expect(existsSync(join(portEnv.DEV_KEY_DIR, 'dev-store.json'))).toBe(false); // nothing left pointing at it
  }, 90_000);

  it('leaves no Java behind when the server is killed outright — and each run has its own access key', async () => {
    const { server, ready } = start({ ...env, PORT: '0' });
    const { dynamodbPort, accessKey } = await ready;
    accessKeys.push(accessKey);
    expect(javaOn(dynamodbPort)).toHaveLength(1);

    server.kill('SIGKILL');

    expect(await until(() => javaOn(dynamodbPort).length === 0, 10_000)).toBe(true);
    expect(new Set(accessKeys).size).toBe(accessKeys.length);
  }, 90_000);
});
