/**
 * `npm run demo [-- --url http://127.0.0.1:3000]`: a scripted agent loop against the local API — it
 * starts one (with DynamoDB Local) unless `--url` names a running one. It loses responses, retries,
 * mints new keys, sends wrong amounts and concurrent duplicates, then reads the invoice and the ledger
 * to show that the money moved once. Then the same loop over MCP with the official client, including
 * a model that forgets its key on send_email: one email.
 */
import { randomUUID } from 'node:crypto';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { CallToolResultSchema } from '@modelcontextprotocol/sdk/types.js';
import { AjvJsonSchemaValidator } from '@modelcontextprotocol/sdk/validation/ajv-provider.js';
import Ajv2020 from 'ajv/dist/2020';
import type { Outbox } from '../app/domain/outbox';
import { READS } from '../app/reads';
import { createServices } from '../app/services';
import { TABLES } from '../app/tables';
import { TOOLS } from '../app/tools';
import { createToolRuntime } from '../lib/lambda/runtime';
import { startLocalApi } from '../lib/local/api-server';
import { DevSigningKey } from '../lib/local/dev-auth';
import { startDynamoDBLocal } from '../lib/local/dynamodb-local';
import { freePort } from '../lib/local/free-port';
import { applyLocalDefaults } from '../lib/local/local-env';
import { createTables } from '../lib/store/create-tables';
import { commandFlags } from './cli-args';

interface Reply {
  status: number;
  body: {
    ok: boolean;
    idempotent?: boolean;
    status?: string;
    receipt?: Record<string, unknown>;
    error?: { code: string; message: string };
  };
}

function describe(reply: Reply): string {
  const { body } = reply;
  if (body.ok && body.receipt)
    return `${reply.status} ${body.idempotent ? 'replayed' : 'executed'}  ${JSON.stringify(body.receipt)}`;
  if (body.status === 'pending') return `${reply.status} pending`;
  return `${reply.status} ${body.error?.code}: ${body.error?.message}`;
}

async function main(): Promise<void> {
  const values = commandFlags(
    `usage: npm run demo -- [--url URL]

A scripted agent loop over REST, then over MCP, against a local API: the one at --url (started with
npm start), else one it starts here on a free port with its own DynamoDB Local.

  --url URL   the local API to drive (default: start one)`,
    { url: { type: 'string' } },
  );
  // The story is what the demo prints: the handlers' EMF metric lines (one per call) would interleave with
  // it. POWERTOOLS_METRICS_DISABLED=false brings them back.
  process.env.POWERTOOLS_METRICS_DISABLED ||= 'true';
  applyLocalDefaults(process.env, 'WARN', TABLES);

  // The dev issuer is the server's own URL: the one --url names, or the one started here.
  const port = values.url ? new URL(values.url).port || '80' : String(await freePort());
  const key = await DevSigningKey.loadOrCreate({ ...process.env, PORT: port });
  const dynamodb = values.url || process.env.DYNAMODB_ENDPOINT ? undefined : await startDynamoDBLocal();
  if (dynamodb) process.env.DYNAMODB_ENDPOINT = dynamodb.endpoint;
  const services = process.env.DYNAMODB_ENDPOINT ? createServices(process.env) : undefined;
  if (services && !values.url) await createTables(services.client, TABLES);
  const api =
    values.url || !services
      ? undefined
      : await startLocalApi({
          tools: TOOLS,
          services,
          logger: services.logger,
          reads: READS,
          runtime: createToolRuntime(services),
          verifyToken: (t) => key.verify(t),
          issuer: key.settings.issuer,
          port: Number(port),
        });
  const url = values.url ?? api?.url;

  const tenant = `demo-${randomUUID().slice(0, 8)}`;
  const token = await key.mint(tenant, 'agent-007');
  async function call(tool: string, args: Record<string, unknown>): Promise<Reply> {
    const response = await fetch(`${url}/tools/${tool}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify(args),
    });
    return { status: response.status, body: (await response.json()) as Reply['body'] };
  }
  async function step(label: string, tool: string, args: Record<string, unknown>): Promise<Reply> {
    const reply = await call(tool, args);
    console.log(`${label.padEnd(52)} ${describe(reply)}`);
    return reply;
  }

  try {
    console.log(`agent demo against ${url} as tenant ${tenant}\n`);
    const invoice = await step('1. create an invoice (key inv-1)', 'create_invoice', {
      idempotency_key: 'inv-1',
      customer: 'cus_ada',
      amount: 4_200,
    });
    const invoiceId = invoice.body.receipt?.invoice_id as string;
    const refund = { invoice_id: invoiceId, amount: 4_200 };
    await step('2. refund it (key refund-1)', 'refund', { idempotency_key: 'refund-1', ...refund });
    await step('3. response lost: retry with the same key', 'refund', { idempotency_key: 'refund-1', ...refund });
    await step('4. model forgot the key: retry with a fresh key', 'refund', {
      idempotency_key: randomUUID(),
      ...refund,
    });
    await step('5. same key, other amount', 'refund', {
      idempotency_key: 'refund-1',
      invoice_id: invoiceId,
      amount: 1,
    });
    await step('6. fresh key, wrong amount', 'refund', {
      idempotency_key: randomUUID(),
      invoice_id: invoiceId,
      amount: 1,
    });
    await step('7. an invoice that does not exist', 'refund', {
      idempotency_key: randomUUID(),
      invoice_id: 'inv_nope',
      amount: 1,
    });

    const second = await call('create_invoice', { idempotency_key: 'inv-2', customer: 'cus_bob', amount: 990 });
    const concurrent = await Promise.all(
      Array.from({ length: 10 }, () =>
        call('refund', { idempotency_key: 'refund-2', invoice_id: second.body.receipt?.invoice_id, amount: 990 }),
      ),
    );
    const tally = (kind: (r: Reply) => boolean) => concurrent.filter(kind).length;
    console.log(
      `${'8. ten concurrent duplicates of one refund'.padEnd(52)} ` +
        `${tally((r) => r.body.ok && !r.body.idempotent)} executed, ${tally((r) => r.body.ok && !!r.body.idempotent)} replayed, ` +
        `${tally((r) => r.status === 202)} pending`,
    );

    const poll = await fetch(`${url}/tools/refund/operations/refund-2`, {
      headers: { authorization: `Bearer ${token}` },
    });
    const operation = (await poll.json()) as { status: string };
    console.log(`${'9. the pending ones poll their key'.padEnd(52)} ${poll.status} ${operation.status}`);

    await mcpLoop(url!, token, tenant, services?.outbox);

    const read = await fetch(`${url}/invoices/${invoiceId}`, { headers: { authorization: `Bearer ${token}` } });
    const { invoice: stored } = (await read.json()) as { invoice: { refunded: boolean; refund: unknown } };
    console.log(`\ninvoice ${invoiceId}: refunded=${stored.refunded} refund=${JSON.stringify(stored.refund)}`);
    if (services) {
      const ledger = await services.ledger.movements(tenant);
      for (const invoiceOf of [invoiceId, second.body.receipt?.invoice_id]) {
        const movements = ledger.filter((m) => m.invoice_id === invoiceOf);
        console.log(
          `ledger for ${invoiceOf}: ${movements.length} movement(s) ${movements.map((m) => `${m.movement_id} ${m.amount}`).join(', ')}`,
        );
      }
    } else {
      console.log('ledger: set DYNAMODB_ENDPOINT to read it');
    }
  } finally {
    await api?.close();
    services?.client.destroy();
    await dynamodb?.stop();
  }
}

/** What an MCP tool result says, in one line. */
function describeMcp(result: { isError?: boolean; structuredContent?: unknown }): string {
  const answer = result.structuredContent as Reply['body'];
  if (answer.status === 'completed') return `completed ${JSON.stringify(answer.receipt)}`;
  if (answer.ok && answer.receipt)
    return `${answer.idempotent ? 'replayed' : 'executed'}  ${JSON.stringify(answer.receipt)}`;
  if (answer.status === 'pending') return 'pending';
  return `isError ${answer.error?.code}: ${answer.error?.message}`;
}

/** The agent loop again, as an MCP client (Claude, Cursor, the Agents SDK) runs it. */
async function mcpLoop(url: string, token: string, tenant: string, outbox: Outbox | undefined): Promise<void> {
  const client = new Client(
    { name: 'retrysafe-demo', version: '1.0.0' },
    { jsonSchemaValidator: new AjvJsonSchemaValidator(new Ajv2020({ strict: false })) },
  );
  await client.connect(
    new StreamableHTTPClientTransport(new URL(`${url}/mcp`), {
      requestInit: { headers: { authorization: `Bearer ${token}` } },
    }),
  );
  try {
    const { tools } = await client.listTools();
    console.log(`\nover MCP (${tools.length} tools: ${tools.map((tool) => tool.name).join(', ')})`);
    async function step(label: string, name: string, args: Record<string, unknown>) {
      const result = await client.callTool({ name, arguments: args });
      console.log(`${label.padEnd(52)} ${describeMcp(result as { structuredContent?: unknown })}`);
      return result.structuredContent as Reply['body'];
    }
    const invoice = await step('M1. create an invoice (key m-inv-1)', 'create_invoice', {
      idempotency_key: 'm-inv-1',
      customer: 'cus_cy',
      amount: 1_500,
    });
    const refund = { invoice_id: invoice.receipt?.invoice_id, amount: 1_500 };
    await step('M2. refund it (key m-refund-1)', 'refund', { idempotency_key: 'm-refund-1', ...refund });
    await step('M3. answer lost: retry with the same key', 'refund', { idempotency_key: 'm-refund-1', ...refund });
    await step('M4. model forgot the key: a fresh one', 'refund', { idempotency_key: randomUUID(), ...refund });
    const email = { to: 'cy@example.com', subject: 'Your refund', body: 'Your refund of 15.00 USD is on its way.' };
    await step('M5. send_email (key m-mail-1)', 'send_email', { idempotency_key: 'm-mail-1', ...email });
    await step('M6. model forgot the key: send_email, fresh key', 'send_email', {
      idempotency_key: randomUUID(),
      ...email,
    });
    const viaRequestKey = await client.request(
      { method: 'tools/call', params: { name: 'send_email', arguments: email, idempotencyKey: 'm-mail-2' } },
      CallToolResultSchema,
    );
    console.log(
      `${'M7. the same email, key in the request (extension)'.padEnd(52)} ${describeMcp(viaRequestKey as { structuredContent?: unknown })}`,
    );
    await step('M8. read the send back with get_operation', 'get_operation', {
      tool: 'send_email',
      idempotency_key: 'm-mail-1',
    });
    if (outbox) {
      const messages = (await outbox.list(tenant)).filter((message) => message.to === email.to);
      console.log(
        `outbox for ${email.to}: ${messages.length} message(s) ${messages.map((m) => `${m.message_id} ${m.status}`).join(', ')}`,
      );
    }
  } finally {
    await client.close();
  }
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
