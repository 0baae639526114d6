import { randomUUID } from 'node:crypto';
import { CreateTableCommand, DeleteTableCommand, ScanCommand } from '@aws-sdk/client-dynamodb';
import type { DynamoDBStreamsClient } from '@aws-sdk/client-dynamodb-streams';
import { Completer } from '../../lib/idempotency/completer';
import { ToolRuntime } from '../../lib/idempotency/runtime';
import type { RefundRequest } from '../../lib/payments/provider';
import { createStreamsClient } from '../../lib/store/client';
import { createTableInput } from '../../lib/store/create-tables';
import { IDEMPOTENCY_ATTRIBUTES, TABLES } from '../../lib/store/tables';
import { refund as refundTool } from '../../lib/tools/refund';
import { advanceClock } from '../helpers/clock';
import { gate } from '../helpers/tools';
import { createWorld, deadline, identity, type World } from '../helpers/world';

// This suite sweeps a key store of its own: the shared one holds other suites' dead workers, which a
// sweep here would finish under their feet.
const TABLE = `completer-keys-${randomUUID().slice(0, 8)}`;

let world: World;
let streams: DynamoDBStreamsClient;
let runtime: ToolRuntime;
beforeAll(async () => {
  world = createWorld();
  streams = createStreamsClient(process.env);
  await world.client.send(new CreateTableCommand(createTableInput(TABLES.idempotency, TABLE)));
  runtime = new ToolRuntime({ client: world.client, tableName: TABLE, attributes: IDEMPOTENCY_ATTRIBUTES });
});
afterAll(async () => {
  await world.client.send(new DeleteTableCommand({ TableName: TABLE }));
  streams.destroy();
  world.destroy();
});
afterEach(() => jest.restoreAllMocks());

function completerFor(tools: Parameters<typeof refundTool.bind>[0]) {
  return new Completer({
    client: world.client,
    streams,
    runtime,
    tools: [refundTool.bind(tools)],
    tableName: TABLE,
    attributes: IDEMPOTENCY_ATTRIBUTES,
  });
}

describe('the completer', () => {
  it('finishes a refund whose worker died after the provider moved money, with no client retry, in one sweep', async () => {
    // Prepare: the provider moves the money, then the worker dies before the receipt is stored.
    const caller = identity();
    const invoice = await world.seedInvoice(caller.tenant);
    const moved = gate();
    const requests: RefundRequest[] = [];
    const provider = {
      async refund(request: RefundRequest) {
        requests.push(request);
        const answer = await world.provider.refund(request);
        if (requests.length === 1) {
          moved.open();
          return new Promise<never>(() => {}); // the worker dies here
        }
        return answer;
      },
    };
    const tool = refundTool.bind({ ...world, provider });
    const call = { idempotency_key: 'k1', invoice_id: invoice.invoice_id, amount: invoice.amount };
    void runtime.invoke(tool, caller, call, deadline(1_000));
    await moved.opened;
    advanceClock(2_000); // the dead worker's lock has expired
    const before = await runtime.lookup('refund', caller, 'k1');

    // Act: one sweep, nobody retries.
    const report = await completerFor({ ...world, provider }).sweep(deadline());

    // Assess
    expect(before).toEqual({ status: 'abandoned' });
    expect(report).toMatchObject({ abandonedFound: 1, completedBySweep: 1, stillRunning: 0 });
    expect(await world.ledgerRows(caller.tenant)).toHaveLength(1);
    expect(new Set(requests.map((request) => request.idempotencyKey)).size).toBe(1); // one downstream key
    const stored = await world.invoices.get(caller.tenant, invoice.invoice_id);
    expect(stored?.refund).toBeDefined();
    expect(await runtime.lookup('refund', caller, 'k1')).toEqual({ status: 'completed', receipt: stored?.refund });
    const items = await world.client.send(new ScanCommand({ TableName: TABLE, ConsistentRead: true }));
    const records = (items.Items ?? []).filter((item) => item.tenant?.S === caller.tenant);
    expect(records.map((item) => [item.status?.S, item.call])).toEqual([['COMPLETED', undefined]]); // no arguments kept
    // The client's own retry now reads the receipt: no second movement, and it says so.
    const retry = await runtime.invoke(tool, caller, call, deadline());
    expect(retry).toEqual({ ok: true, idempotent: true, key: 'k1', receipt: stored?.refund });
    expect(await world.ledgerRows(caller.tenant)).toHaveLength(1);
  });

  it('leaves finished calls alone and carries running ones to the next sweep', async () => {
    const caller = identity();
    const invoice = await world.seedInvoice(caller.tenant);
    const other = await world.seedInvoice(caller.tenant);
    const hold = gate();
    const started = gate();
    const holding = {
      async refund(request: RefundRequest) {
        if (request.invoiceId === other.invoice_id) {
          started.open();
          await hold.opened;
        }
        return world.provider.refund(request);
      },
    };
    const tool = refundTool.bind({ ...world, provider: holding });
    const completer = completerFor({ ...world, provider: holding });
    await completer.sweep(deadline()); // read up to now: earlier tests' records are behind the checkpoint

    await runtime.invoke(
      tool,
      caller,
      { idempotency_key: 'k1', invoice_id: invoice.invoice_id, amount: 4_200 },
      deadline(),
    );
    const running = runtime.invoke(
      tool,
      caller,
      { idempotency_key: 'k2', invoice_id: other.invoice_id, amount: 4_200 },
      deadline(),
    );
    await started.opened;
    const whileRunning = await completer.sweep(deadline());
    hold.open();
    await running;
    const afterwards = await completer.sweep(deadline());

    expect(whileRunning).toMatchObject({ abandonedFound: 0, completedBySweep: 0, stillRunning: 1 });
    expect(whileRunning.recordsRead).toBeGreaterThanOrEqual(3); // k1's claim and result, k2's claim
    expect(afterwards).toMatchObject({ abandonedFound: 0, stillRunning: 0 });
    expect(await world.ledgerRows(caller.tenant)).toHaveLength(2);
  });
});
