import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { devBanner } from '../../lib/cli/dev-command';
import type { RetrysafeConfig } from '../../lib/dev/config';
import { type DevServer, startDevServer } from '../../lib/dev/dev-server';
import example from '../../retrysafe.config';

/** `retrysafe dev` on `config`, in this process, on the suite's DynamoDB Local and a free port. */
async function served(config: RetrysafeConfig<unknown>) {
  const env = { ...process.env, DEV_KEY_DIR: mkdtempSync(join(tmpdir(), 'retrysafe-key-')) };
  const server: DevServer = await startDevServer(config, { port: 0, env, completerIntervalMs: 60_000 });
  return { server, banner: devBanner(server, config, env, false) };
}

/** The reads a banner lists: each line's method, URL and read. */
function readLines(banner: string) {
  return [...banner.matchAll(/^ {2}READ {2}(GET) (\S+) {3}\((\w+); also over MCP\)$/gm)].map(
    ([, method, url, name]) => ({
      method,
      url,
      name,
    }),
  );
}

describe('the retrysafe dev banner', () => {
  it("lists the app's reads with the routes the server answers them on, as it lists the tools", async () => {
    const { server, banner } = await served(example as RetrysafeConfig<unknown>);
    try {
      const listed = readLines(banner);
      // Each listed route is served: without a token it is refused (401), never unknown (404).
      const answered = await Promise.all(
        listed.map(({ url }) => fetch(url.replace(/\{[^}]+\}/g, 'x1')).then((response) => response.status)),
      );

      expect(banner).toMatch(
        /^retrysafe dev: 5 tool\(s\): create_invoice, refund, create_ticket, close_ticket, send_email; 2 read\(s\): get_invoice, get_ticket$/m,
      );
      expect(listed).toEqual([
        { method: 'GET', url: `${server.url}/invoices/{invoice_id}`, name: 'get_invoice' },
        { method: 'GET', url: `${server.url}/tickets/{ticket_key}`, name: 'get_ticket' },
      ]);
      expect(answered).toEqual([401, 401]);
    } finally {
      await server.close();
    }
  });

  it('says so when the config lists no reads', async () => {
    const { server, banner } = await served({ ...(example as RetrysafeConfig<unknown>), reads: [] });
    try {
      expect(banner).toMatch(/^retrysafe dev: 5 tool\(s\): .*; no reads \(the config lists none\)$/m);
      expect(readLines(banner)).toEqual([]);
    } finally {
      await server.close();
    }
  });
});
