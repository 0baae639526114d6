/**
 * Benchmark: DynamoDB requests, write units and latency per kind of call, on DynamoDB Local.
 *
 *   npm run bench
 *
 * Prints, for each kind of call, the requests it sends (by command), the write units it consumed on the
 * idempotency table and on the domain tables, and its median latency;
 * and the ratio of a replay's latency to a first execution's. Request counts and capacity units are
 * exact (`ReturnConsumedCapacity` works on DynamoDB Local); absolute latencies are not AWS latencies.
 * A refused conditional write consumes a write unit on AWS too, but its error carries no capacity: such
 * writes are counted as requests only.
 *
 * Then the performance goals, next to a bare Powertools handler (`bench/goals.ts`): CPU per call,
 * latency, cold module init of a write function and of the MCP function, the tracing and source-map
 * choices, and where the CPU over bare goes (each feature taken out at bundle time: bench/ablation.ts);
 * and the completer's fold rate; attach's round trips saved against the Lambda time its wait costs
 * (bench/attach.ts, alone: `npm run bench:attach`).
 *
 * The goals are measured in Lambda-like child processes on the Node.js major the stack deploys
 * (`LAMBDA_RUNTIME`, nodejs24.x → Node 24), whatever Node runs the bench itself: on Node 20,
 * AsyncLocalStorage's promise hooks alone add ~1.2 ms to every call, a cost the deployed runtime does not
 * have. Without a Node 24 at hand the bench installs one once (bench/deployed-node.ts). The per-kind
 * table and the completer's fold rate are measured in this process, on this machine's Node (printed).
 *
 *   npm run bench -- --before <checkout>   also measures another checkout (its node_modules installed),
 *                                          deployed as it was before the performance work (same Node)
 *   BENCH_ROUNDS (30), BENCH_GOAL_ROUNDS (200), BENCH_INIT_SAMPLES (15), BENCH_ABLATION_ROUNDS (600)
 *   BENCH_NODE=/path/to/node               the functions' Node binary; BENCH_NODE=current: this machine's Node
 */
import { randomUUID } from 'node:crypto';
import { type AttributeValue, type DynamoDBClient, ScanCommand } from '@aws-sdk/client-dynamodb';
import { createServices } from '../app/services';
import { TABLES, tableName } from '../app/tables';
import { refund as refundTool } from '../app/tools/refund';
import { sendEmail as sendEmailTool } from '../app/tools/send-email';
import { commandFlags } from '../bin/cli-args';
import { eraseTenant } from '../lib/admin/erase-tenant';
import { Completer, readTask, type StreamChange, type ToolRuntime } from '../lib/idempotency';
import { DEFAULT_RECORD_ATTRIBUTES } from '../lib/idempotency/protocol/record';
import { createToolRuntime } from '../lib/lambda/runtime';
import { startDynamoDBLocal } from '../lib/local/dynamodb-local';
import { applyLocalDefaults } from '../lib/local/local-env';
import { createTables } from '../lib/store/create-tables';
import { benchAttach } from './attach';
import { describeDeployedNode, resolveDeployedNode } from './deployed-node';
import { benchGoals } from './goals';

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 30);
const GOAL_ROUNDS = Number(process.env.BENCH_GOAL_ROUNDS ?? 200);
const INIT_SAMPLES = Number(process.env.BENCH_INIT_SAMPLES ?? 15);
const ABLATION_ROUNDS = Number(process.env.BENCH_ABLATION_ROUNDS ?? 600);
const BEFORE = commandFlags(
  `usage: npm run bench -- [--before DIR]

DynamoDB requests, write units and latency per kind of call on DynamoDB Local, then the performance goals
next to a bare Powertools handler (CPU per call, latency, cold init), and the completer's fold rate.
BENCH_ROUNDS (30), BENCH_GOAL_ROUNDS (200), BENCH_INIT_SAMPLES (15) and BENCH_ABLATION_ROUNDS (600) set
the rounds; BENCH_NODE=/path/to/node (or current) the functions' Node binary.

  --before DIR   also measure another checkout of retrysafe (its node_modules installed), deployed as it
                 was before the performance work`,
  { before: { type: 'string' } },
).before;

interface Meter {
  requests: Map<string, number>;
  /** Requests to the idempotency table. */
  keyStoreRequests: number;
  /** Write units on the idempotency table (and its index), and on every other table. */
  keyStoreWcu: number;
  domainWcu: number;
}

/** Counts every request and asks DynamoDB for the capacity each consumed. */
function meter(client: DynamoDBClient): Meter {
  const counts: Meter = { requests: new Map(), keyStoreRequests: 0, keyStoreWcu: 0, domainWcu: 0 };
  const keyStore = tableName('idempotency');
  client.middlewareStack.add(
    (next, context) => async (args) => {
      const command = context.commandName ?? 'unknown';
      counts.requests.set(command, (counts.requests.get(command) ?? 0) + 1);
      const input = args.input as { TableName?: string; ReturnConsumedCapacity?: string };
      if (input.TableName === keyStore) counts.keyStoreRequests += 1;
      if (input.TableName && /^(Put|Update|Delete|Get)Item/.test(command)) input.ReturnConsumedCapacity = 'INDEXES';
      const result = await next(args);
      const consumed = (result.output as { ConsumedCapacity?: { CapacityUnits?: number; TableName?: string } })
        .ConsumedCapacity;
      // Reads report read units: only writes count here.
      if (consumed?.CapacityUnits && !command.startsWith('Get')) {
        if (consumed.TableName === keyStore) counts.keyStoreWcu += consumed.CapacityUnits;
        else counts.domainWcu += consumed.CapacityUnits;
      }
      return result;
    },
    { step: 'initialize', name: 'benchMeter' },
  );
  return counts;
}

/** How many items the idempotency table holds (a consistent count, for the erase figure). */
async function countRecords(client: DynamoDBClient): Promise<number> {
  let count = 0;
  let startKey: Record<string, AttributeValue> | undefined;
  do {
    const page = await client.send(
      new ScanCommand({ TableName: tableName('idempotency'), Select: 'COUNT', ExclusiveStartKey: startKey }),
    );
    count += page.Count ?? 0;
    startKey = page.LastEvaluatedKey;
  } while (startKey);
  return count;
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] ?? 0;

async function main(): Promise<void> {
  // First: a missing Node binary fails at once, before DynamoDB Local starts.
  const node = resolveDeployedNode();
  console.log(describeDeployedNode(node));
  applyLocalDefaults(process.env, 'SILENT', TABLES);
  // The metric lines (one per call) would bury the figures; the metrics are tested on their own.
  process.env.POWERTOOLS_METRICS_DISABLED ??= 'true';
  const local = process.env.DYNAMODB_ENDPOINT ? undefined : await startDynamoDBLocal();
  if (local) process.env.DYNAMODB_ENDPOINT = local.endpoint;
  const services = createServices(process.env);
  const runtime = createToolRuntime(services);
  const refund = refundTool.bind(services);
  const sendEmail = sendEmailTool.bind(services);
  try {
    await createTables(services.client, TABLES);
    const counts = meter(services.client);
    const deadline = () => {
      const end = Date.now() + 10_000;
      return { getRemainingTimeInMillis: () => end - Date.now() };
    };
    const kinds = [
      'refund: first execution',
      'refund: replay (same key)',
      'refund: replay (new key, natural key)',
      'refund: conflict (same key, other amount)',
      'send_email: first execution (dedupe window)',
      'send_email: replay (new key, same intent)',
      'refund: MCP tasks/get (the task view, a poll)',
    ];
    const samples = new Map(
      kinds.map((kind) => [kind, { ms: [] as number[], requests: new Map(), keyRequests: 0, key: 0, domain: 0 }]),
    );

    for (let round = 0; round < ROUNDS; round++) {
      const identity = { tenant: `bench-${randomUUID()}`, user: 'ada' };
      await services.invoices.create({
        tenant: identity.tenant,
        invoice_id: 'inv_1',
        customer: 'c',
        amount: 1_000,
        currency: 'usd',
        created_at: new Date().toISOString(),
      });
      const email = { to: 'a@example.com', subject: 's', body: 'b' };
      const invoke = (tool: typeof refund | typeof sendEmail, input: Record<string, unknown>) => () =>
        runtime.invoke(tool as typeof refund, identity, input, deadline());
      const calls: Array<[string, () => Promise<unknown>]> = [
        [kinds[0]!, invoke(refund, { idempotency_key: 'k1', invoice_id: 'inv_1', amount: 1_000 })],
        [kinds[1]!, invoke(refund, { idempotency_key: 'k1', invoice_id: 'inv_1', amount: 1_000 })],
        [kinds[2]!, invoke(refund, { idempotency_key: 'k2', invoice_id: 'inv_1', amount: 1_000 })],
        [kinds[3]!, invoke(refund, { idempotency_key: 'k1', invoice_id: 'inv_1', amount: 999 })],
        [kinds[4]!, invoke(sendEmail, { idempotency_key: 'e1', ...email })],
        [kinds[5]!, invoke(sendEmail, { idempotency_key: 'e2', ...email })],
        // What the MCP endpoint's tasks/get sends for the refund's task (and tasks/result for each poll).
        [kinds[6]!, () => readTask(runtime, refund, identity, 'k1')],
      ];
      for (const [kind, call] of calls) {
        counts.requests.clear();
        counts.keyStoreRequests = 0;
        counts.keyStoreWcu = 0;
        counts.domainWcu = 0;
        const started = process.hrtime.bigint();
        await call();
        const sample = samples.get(kind)!;
        sample.ms.push(Number(process.hrtime.bigint() - started) / 1e6);
        for (const [command, n] of counts.requests)
          sample.requests.set(command, (sample.requests.get(command) ?? 0) + n);
        sample.keyRequests += counts.keyStoreRequests;
        sample.key += counts.keyStoreWcu;
        sample.domain += counts.domainWcu;
      }
    }

    console.log(
      `DynamoDB Local, ${ROUNDS} rounds, in this process (Node ${process.versions.node}): ` +
        'requests, write units (idempotency table / domain) and median latency per call',
    );
    for (const [kind, { ms, requests, keyRequests, key, domain }] of samples) {
      const perCall = [...requests].map(([command, n]) => `${command.replace('Command', '')} ${n / ROUNDS}`).join(', ');
      const total = [...requests.values()].reduce((a, b) => a + b, 0) / ROUNDS;
      console.log(
        `  ${kind.padEnd(44)} ${String(total).padStart(3)} requests (${keyRequests / ROUNDS} on the idempotency table)  ` +
          `WCU ${(key / ROUNDS).toFixed(1)} / ${(domain / ROUNDS).toFixed(1)}  ${median(ms).toFixed(1).padStart(6)} ms  (${perCall})`,
      );
    }
    const first = median(samples.get(kinds[0]!)!.ms);
    console.log(`  replay / first execution latency: ${(median(samples.get(kinds[1]!)!.ms) / first).toFixed(2)}`);
    // Bare Powertools' own cost: a claim and a result (2 requests, 2 write units), a replay one request.
    const firstRefund = samples.get(kinds[0]!)!;
    const replayRefund = samples.get(kinds[1]!)!;
    const onKeyStore = [firstRefund.keyRequests / ROUNDS, firstRefund.key / ROUNDS, replayRefund.keyRequests / ROUNDS];
    const met = onKeyStore[0] === 2 && onKeyStore[1] === 2 && onKeyStore[2] === 1;
    console.log(
      `  idempotency table per refund: first call ${onKeyStore[0]} requests, ${onKeyStore[1]!.toFixed(1)} WCU; ` +
        `replay ${onKeyStore[2]} request (goal: 2 / 2.0 and 1, as bare Powertools): ${met ? 'met' : 'MISSED'}`,
    );
    const poll = samples.get(kinds[6]!)!;
    const pollRequests = [...poll.requests].map(([command, n]) => `${command.replace('Command', '')} ${n / ROUNDS}`);
    const pollMet = pollRequests.join() === 'GetItem 1' && poll.key === 0;
    console.log(
      `  an MCP task's poll (tasks/get): ${pollRequests.join(', ')}, ${(poll.key / ROUNDS).toFixed(1)} WCU ` +
        `(goal: one GetItem, no write): ${pollMet ? 'met' : 'MISSED'}`,
    );

    // What a tenant erase costs instead of a tenant index: one Scan of the idempotency table.
    const records = await countRecords(services.client);
    const erase = await eraseTenant(services.client, { tenant: 'bench-nobody', dryRun: true }, process.env, TABLES);
    const readUnits = erase.tables.idempotency?.readUnits ?? 0;
    console.log(
      `tenant erase: a Scan of ${records} idempotency records read ${readUnits.toFixed(1)} read units ` +
        `(${((readUnits / Math.max(1, records)) * 1000).toFixed(1)} per 1,000 records); a tenant index would cost 1 write unit on every claim`,
    );
    await benchCompleterFold(services.client, runtime);
    await benchGoals({
      store: {
        DYNAMODB_ENDPOINT: process.env.DYNAMODB_ENDPOINT!,
        AWS_ACCESS_KEY_ID: process.env.AWS_ACCESS_KEY_ID!,
        AWS_SECRET_ACCESS_KEY: process.env.AWS_SECRET_ACCESS_KEY!,
      },
      node,
      ...(BEFORE ? { before: BEFORE } : {}),
      initSamples: INIT_SAMPLES,
      rounds: GOAL_ROUNDS,
      ablationRounds: ABLATION_ROUNDS,
    });
    await benchAttach(process.env);
  } finally {
    services.client.destroy();
    await local?.stop();
  }
}

/**
 * The completer's stream side: how many stream records one invocation folds per second (a batch of
 * 100 — the event source mapping's batch size — half claims, half results, as calls that complete
 * inside the batching window leave them), and so the call rate one shard keeps up with.
 */
async function benchCompleterFold(client: DynamoDBClient, runtime: ToolRuntime): Promise<void> {
  let rechecks = 0;
  const completer = new Completer({
    client,
    runtime,
    tools: [],
    queue: {
      async send(sent) {
        rechecks += sent.length;
      },
    },
    tableName: tableName('idempotency'),
    attributes: DEFAULT_RECORD_ATTRIBUTES,
  });
  const now = Date.now();
  const batch: StreamChange[] = [];
  for (let call = 0; call < 50; call++) {
    const id = { S: `refund#${randomUUID()}` };
    const common = { id, tenant: { S: 'bench' }, tool: { S: 'refund' }, claim_id: { S: randomUUID() } };
    batch.push({
      eventName: 'INSERT',
      dynamodb: {
        Keys: { id },
        SequenceNumber: String(2 * call + 1),
        NewImage: { ...common, status: { S: 'INPROGRESS' }, in_progress_expiration: { N: String(now + 30_000) } },
      },
    });
    batch.push({
      eventName: 'MODIFY',
      dynamodb: {
        Keys: { id },
        SequenceNumber: String(2 * call + 2),
        NewImage: { ...common, status: { S: 'COMPLETED' } },
      },
    });
  }
  for (let i = 0; i < 200; i++) await completer.onStream(batch); // warm up
  const runs = 2_000;
  const started = process.hrtime.bigint();
  for (let i = 0; i < runs; i++) await completer.onStream(batch);
  const msPerBatch = Number(process.hrtime.bigint() - started) / 1e6 / runs;
  const recordsPerSecond = (batch.length / msPerBatch) * 1000;
  // A shard follows one partition, which takes at most 1,000 writes a second: 500 calls (claim + result).
  console.log(
    `completer (in this process, Node ${process.versions.node}): one invocation folds a batch of ${batch.length} stream records in ${msPerBatch.toFixed(3)} ms ` +
      `(${Math.round(recordsPerSecond).toLocaleString('en')} records/s, ${Math.round(recordsPerSecond / 2).toLocaleString('en')} calls/s); ` +
      `a shard carries at most ~1,000 writes/s (one partition, 500 calls/s), so the fold keeps up with it ` +
      `${Math.floor(recordsPerSecond / 1_000)}× over, before Lambda's per-invocation overhead; rechecks sent for completed calls: ${rechecks}`,
  );
}

main().catch((error) => {
  console.error(error);
  process.exitCode = 1;
});
