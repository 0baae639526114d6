/**
 * `retrysafe dev` as a team uses it on its own app: the installed package's command serves this app's
 * tools (retrysafe.config.ts) on REST and MCP; the official MCP SDK client calls them; `retrysafe calls`,
 * `complete` and `erase` operate the same store. Nothing here reaches into retrysafe's source.
 */
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient, QueryCommand } from '@aws-sdk/lib-dynamodb';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

// The SDK's notice that its releases after January 2027 need Node 22 (this machine runs Node 20).
process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED = 'true';
const run = promisify(execFile);
const APP = join(__dirname, '..');
const BIN = join(APP, 'node_modules', '.bin', 'retrysafe');

/**
 * A CRM that honours idempotency keys: the first request under a key writes the contact, a repeat answers
 * it; while a key is held, its requests answer 409 (the first one still running), as Stripe does.
 */
function fakeCrm() {
  const contacts = new Map<string, { crm_id: string; external_id: string; name: string }>();
  const held = new Set<string>();
  let holdNext = false;
  const server: Server = createServer((request, response) => {
    let body = '';
    request.on('data', (chunk: Buffer) => {
      body += chunk.toString();
    });
    request.on('end', () => {
      const key = String(request.headers['idempotency-key']);
      if (holdNext) {
        held.add(key);
        holdNext = false;
      }
      if (held.has(key)) {
        // 3 s: the call stays parked `pending` while two CLI runs read it, on a busy runner too.
        response.writeHead(409, { 'retry-after': '3' }).end('{"error":"in progress"}');
        return;
      }
      if (!contacts.has(key)) contacts.set(key, { crm_id: `crm_${contacts.size + 1}`, ...JSON.parse(body) });
      response.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(contacts.get(key)));
    });
  });
  return {
    contacts,
    /** The next key the CRM sees stays "in progress" until `release()`. */
    holdNext: () => {
      holdNext = true;
    },
    release: () => held.clear(),
    listen: () => new Promise<string>((resolve) => server.listen(0, '127.0.0.1', () => resolve(`http://127.0.0.1:${(server.address() as AddressInfo).port}`))),
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

const crm = fakeCrm();
const keyDir = mkdtempSync(join(tmpdir(), 'own-tools-dev-'));
let env: NodeJS.ProcessEnv;
let dev: ChildProcess;
let url = '';
let port = '';
let output = '';

/** The `retrysafe` command of the installed package, in this app's directory. */
async function retrysafe(...args: string[]): Promise<string> {
  const { stdout } = await run(BIN, args, { cwd: APP, env });
  return stdout;
}

/** The command's exit code and what it printed, whatever the code (a partial erase exits 3). */
async function retrysafeExit(...args: string[]): Promise<{ code: number; stdout: string }> {
  try {
    return { code: 0, stdout: await retrysafe(...args) };
  } catch (error) {
    const failed = error as { code?: number; stdout?: string };
    return { code: failed.code ?? 1, stdout: failed.stdout ?? '' };
  }
}

beforeAll(async () => {
  const { DYNAMODB_ENDPOINT: _none, PORT: _port, ...base } = process.env;
  env = { ...base, CRM_URL: await crm.listen(), DEV_KEY_DIR: keyDir, POWERTOOLS_LOG_LEVEL: 'WARN', COMPLETER_INTERVAL_SECONDS: '1' };
  dev = spawn(BIN, ['dev', '--port', '0'], { cwd: APP, env, stdio: ['ignore', 'pipe', 'pipe'] });
  await new Promise<void>((resolve, reject) => {
    const seen = (chunk: Buffer) => {
      output += chunk.toString();
      const found = /REST {2}(http:\/\/127\.0\.0\.1:(\d+))\/tools/.exec(output);
      if (found && /Ctrl-C/.test(output)) {
        url = found[1]!;
        port = found[2]!;
        resolve();
      }
    };
    dev.stdout?.on('data', seen);
    dev.stderr?.on('data', seen);
    dev.once('exit', (code) => reject(new Error(`retrysafe dev exited with ${code}:\n${output}`)));
  });
}, 90_000);

afterAll(async () => {
  const exited = new Promise((resolve) => dev.once('exit', resolve));
  dev.kill('SIGINT');
  await exited;
  await crm.close();
});

async function token(tenant: string): Promise<string> {
  return (await retrysafe('token', '--tenant', tenant, '--user', 'ada', '--port', port)).trim();
}

async function mcpClient(bearer: string): Promise<Client> {
  const client = new Client({ name: 'own-tools-e2e', version: '1.0.0' });
  await client.connect(
    new StreamableHTTPClientTransport(new URL(`${url}/mcp`), { requestInit: { headers: { authorization: `Bearer ${bearer}` } } }),
  );
  return client;
}

async function post(bearer: string, tool: string, args: Record<string, unknown>) {
  const response = await fetch(`${url}/tools/${tool}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${bearer}`, 'content-type': 'application/json' },
    body: JSON.stringify(args),
  });
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
}

/** The accounts this app's own table holds for a tenant, read as an operator would (dev's DynamoDB Local). */
async function accountsOf(tenant: string) {
  const store = JSON.parse(readFileSync(join(keyDir, 'dev-store.json'), 'utf8'));
  const client = new DynamoDBClient({
    endpoint: store.endpoint,
    region: store.region,
    credentials: { accessKeyId: store.accessKeyId, secretAccessKey: store.secretAccessKey },
  });
  try {
    const page = await DynamoDBDocumentClient.from(client).send(
      new QueryCommand({
        TableName: store.tables.accounts,
        KeyConditionExpression: 'tenant = :tenant',
        ExpressionAttributeValues: { ':tenant': tenant },
        ConsistentRead: true,
      }),
    );
    return page.Items ?? [];
  } finally {
    client.destroy();
  }
}

describe('retrysafe dev on this app', () => {
  it('prints the MCP URL, a token command and a curl line for one of its own tools', () => {
    expect(output).toContain(`MCP   ${url}/mcp`);
    expect(output).toContain(`npx retrysafe token --tenant acme --user ada --port ${port}`);
    expect(output).toMatch(/curl -s http:\/\/127\.0\.0\.1:\d+\/tools\/open_account .*\n.*-d '\{"idempotency_key":"k1","external_id":"external-id-1","name":"name-1"\}'/);
  });

  it('serves its tools over MCP (the official SDK client) and REST: the same key twice is one call', async () => {
    const bearer = await token('e2e-calls');
    const client = await mcpClient(bearer);
    const args = { idempotency_key: 'k1', external_id: 'crm-42', name: 'Ada' };

    const { tools } = await client.listTools();
    const first = await client.callTool({ name: 'open_account', arguments: args });
    const second = await client.callTool({ name: 'open_account', arguments: args });
    const logged = await post(bearer, 'log_call', { idempotency_key: 'c1', summary: 'Discussed pricing' });
    const loggedAgain = await post(bearer, 'log_call', { idempotency_key: 'c1', summary: 'Discussed pricing' });
    await client.close();

    expect(tools.map((tool) => tool.name).sort()).toEqual(['get_operation', 'log_call', 'open_account', 'push_contact']);
    expect(first.structuredContent).toMatchObject({ ok: true, idempotent: false, receipt: { external_id: 'crm-42' } });
    expect(second.structuredContent).toMatchObject({ ok: true, idempotent: true, receipt: (first.structuredContent as { receipt?: unknown }).receipt });
    expect([logged.status, logged.body.idempotent, loggedAgain.status, loggedAgain.body.idempotent]).toEqual([200, false, 200, true]);
    expect(await accountsOf('e2e-calls')).toHaveLength(1);
  });

  it('shows a call parked pending in retrysafe calls; erases the tenant’s own table at once (the call accesses none of it), its record once it settled', async () => {
    const tenant = 'e2e-erase';
    const bearer = await token(tenant);
    const client = await mcpClient(bearer);
    await client.callTool({ name: 'open_account', arguments: { idempotency_key: 'k1', external_id: 'crm-7', name: 'Grace' } });
    crm.holdNext();

    const pending = await post(bearer, 'push_contact', { idempotency_key: 'p1', external_id: 'crm-7', name: 'Grace' });
    const inFlight = JSON.parse(await retrysafe('calls', '--tenant', tenant, '--state', 'pending', '--json'));
    // Partial: its table waits for the call in flight — exit 3, so a script can tell.
    const partial = await retrysafeExit('erase', '--tenant', tenant, '--include-domain', '--json');
    const whileInFlight = JSON.parse(partial.stdout);
    crm.release();
    await new Promise((resolve) => setTimeout(resolve, 3_200)); // the parked lock's end (Retry-After: 3)
    const completed = await retrysafe('complete');
    const pushed = await post(bearer, 'push_contact', { idempotency_key: 'p1', external_id: 'crm-7', name: 'Grace' });
    const erased = JSON.parse(await retrysafe('erase', '--tenant', tenant, '--include-domain', '--json'));
    const replay = await client.callTool({ name: 'open_account', arguments: { idempotency_key: 'k1', external_id: 'crm-7', name: 'Grace' } });
    await client.close();

    expect(pending.body).toMatchObject({ ok: false, status: 'pending' });
    // Its attempts: 1, or 2 when the CLI started after the parked lock's end (3 s) on a busy runner — dev's
    // completer then took it over, and the held CRM parked it again: pending either way.
    expect(inFlight.calls).toEqual([
      expect.objectContaining({ tool: 'push_contact', state: 'pending', user: 'ada', clientKey: 'p1' }),
    ]);
    expect(inFlight.calls[0].attempts).toBeGreaterThanOrEqual(1);
    // push_contact accesses no table of the app's (`access: {}`): its call in flight holds back only its own
    // record — the accounts table is erased at once, and the erase says what is left (exit 3).
    expect(partial.code).toBe(3);
    expect(whileInFlight).toMatchObject({
      complete: false,
      deferred: [{ table: 'idempotency', reason: 'items_kept', calls: 1, items: 1 }],
      tables: { accounts: { found: 1, deleted: 1, inFlight: 0 } },
    });
    expect(whileInFlight.kept.accounts).toBeUndefined();
    expect(completed).toMatch(/^completer .*: \d+ stream records read/);
    expect(pushed.body).toMatchObject({ ok: true, receipt: { external_id: 'crm-7' } });
    expect([...crm.contacts.values()].filter((contact) => contact.external_id === 'crm-7')).toHaveLength(1);
    expect(erased).toMatchObject({ complete: true, deferred: [], tables: { idempotency: { inFlight: 0 } } });
    expect(await accountsOf(tenant)).toEqual([]);
    expect(replay.structuredContent).toMatchObject({ ok: false, error: { code: 'not_found' } });
  }, 60_000);
});
