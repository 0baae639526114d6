// Rule 8 (docs/state-machine.md): every call ends, in a time its answers state.
import { randomUUID } from 'node:crypto';
import { CreateTableCommand, DeleteItemCommand, DeleteTableCommand, ScanCommand } from '@aws-sdk/client-dynamodb';
import type { DynamoDBStreamsClient } from '@aws-sdk/client-dynamodb-streams';
import type { RefundRequest } from '../../app/payments/provider';
import { refund as refundTool } from '../../app/tools/refund';
import { dueAfterParkMs } from '../../lib/idempotency/backoff';
import { Completer } from '../../lib/idempotency/completer';
import { DEFAULT_RECORD_ATTRIBUTES } from '../../lib/idempotency/protocol/record';
import { ToolRuntime } from '../../lib/idempotency/runtime';
import { completerPass } from '../../lib/local/completer-pass';
import { LocalRecheckQueue } from '../../lib/local/recheck-queue';
import { LocalStreamFeed } from '../../lib/local/stream-feed';
import { createStreamsClient } from '../../lib/local/streams-client';
import { createTableInput } from '../../lib/store/create-tables';
import { IDEMPOTENCY_TABLE } from '../../lib/store/tables';
import { advanceClock } from '../helpers/clock';
import { gate } from '../helpers/tools';
import { createWorld, deadline, identity, type World } from '../helpers/world';

// This suite feeds the completer a key store of its own: the shared one holds other suites' dead
// workers, which a completer here would finish under their feet.
const TABLE = `completer-keys-${randomUUID().slice(0, 8)}`;
/** Past the completer's first look at a call whose first attempt failed now: the stream's window after its park. */
const PAST_THE_FIRST_LOOK_MS = dueAfterParkMs(1) + 1_000;

let world: World;
let streams: DynamoDBStreamsClient;
let runtime: ToolRuntime;
beforeAll(async () => {
  world = createWorld();
  streams = createStreamsClient(process.env);
  await world.client.send(new CreateTableCommand(createTableInput(IDEMPOTENCY_TABLE, TABLE)));
  runtime = new ToolRuntime({ client: world.client, tableName: TABLE, attributes: DEFAULT_RECORD_ATTRIBUTES });
});
afterAll(async () => {
  await world.client.send(new DeleteTableCommand({ TableName: TABLE }));
  streams.destroy();
  world.destroy();
});
afterEach(() => jest.restoreAllMocks());

/** The completer as the stack runs it: the stream (locally, DynamoDB Local's) and the recheck queue. */
function completerFor(tools: Parameters<typeof refundTool.bind>[0], options: { runtime?: ToolRuntime } = {}) {
  const queue = new LocalRecheckQueue();
  const feed = new LocalStreamFeed(streams, TABLE);
  const completer = new Completer({
    client: world.client,
    runtime: options.runtime ?? runtime,
    tools: [refundTool.bind(tools)],
    queue,
    tableName: TABLE,
    attributes: DEFAULT_RECORD_ATTRIBUTES,
  });
  return {
    queue,
    /** The event source mapping's part: the stream's new records into `onStream`. */
    stream: () => feed.poll(async (records) => void (await completer.onStream(records))),
    /** The recheck queue's part: every due message into `onRecheck`. */
    async rechecks() {
      const outcomes: string[] = [];
      for (const { recheck, receipt } of queue.receive()) {
        outcomes.push(await completer.onRecheck(recheck, deadline()));
        queue.delete(receipt);
      }
      return outcomes;
    },
  };
}

describe('the completer', () => {
  it('finishes a refund whose worker died after the provider moved money, with no client retry', async () => {
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
    const completer = completerFor({ ...world, provider });
    await completer.stream(); // earlier tests' records
    completer.queue.purge();
    const call = { idempotency_key: 'k1', invoice_id: invoice.invoice_id, amount: invoice.amount };
    void runtime.invoke(tool, caller, call, deadline(1_000));
    await moved.opened;

    // Act: the stream brings the claim (in flight: a recheck at its lock's end); the lock expires; the
    // recheck finds it abandoned and finishes it. Nobody retries.
    await completer.stream();
    const notYet = await completer.rechecks();
    advanceClock(3_000);
    const before = await runtime.lookup('refund', caller, 'k1');
    const outcomes = await completer.rechecks();

    // Assess
    expect(notYet).toEqual([]);
    // Abandoned at its first attempt: due now (its lock's end) — ask again in a second, or resend.
    expect(before).toEqual({ status: 'abandoned', retryAfterMs: 1_000 });
    expect(outcomes).toEqual(['finished']);
    expect(await world.ledgerRows(caller.tenant)).toHaveLength(1);
    expect(new Set(requests.map((request) => request.idempotencyKey)).size).toBe(1); // one downstream key
    const stored = await world.invoices.get(caller.tenant, invoice.invoice_id);
    expect(stored?.refund).toBeDefined();
    expect(await runtime.lookup('refund', caller, 'k1')).toEqual({ status: 'completed', receipt: stored?.refund });
    const items = await world.client.send(new ScanCommand({ TableName: TABLE, ConsistentRead: true }));
    const records = (items.Items ?? []).filter((item) => item.tenant?.S === caller.tenant);
    expect(records.map((item) => [item.status?.S, item.call])).toEqual([['COMPLETED', undefined]]); // no arguments kept
    // The client's own retry now reads the receipt: no second movement, and it is a replay — the
    // completer's run was the one that executed it.
    const retry = await runtime.invoke(tool, caller, call, deadline());
    expect(retry).toEqual({ ok: true, idempotent: true, key: 'k1', receipt: stored?.refund });
    expect(await world.ledgerRows(caller.tenant)).toHaveLength(1);
  });

  it('keeps an abandoned call whose re-run fails transiently, and finishes it on a later recheck', async () => {
    const caller = identity();
    const invoice = await world.seedInvoice(caller.tenant);
    let calls = 0;
    const provider = {
      async refund(request: RefundRequest) {
        calls += 1;
        if (calls === 1) return new Promise<never>(() => {}); // the worker dies before the provider answers
        if (calls === 2) throw Object.assign(new Error('provider blip'), { name: 'TimeoutError' });
        return world.provider.refund(request);
      },
    };
    const tool = refundTool.bind({ ...world, provider });
    const completer = completerFor({ ...world, provider });
    await completer.stream();
    completer.queue.purge();
    const call = { idempotency_key: 'k1', invoice_id: invoice.invoice_id, amount: invoice.amount };
    void runtime.invoke(tool, caller, call, deadline(1_000));
    while (calls === 0) await new Promise((resolve) => setImmediate(resolve));

    await completer.stream();
    advanceClock(3_000);
    const first = await completer.rechecks(); // the re-run meets the blip: kept, never deleted
    const afterBlip = await runtime.lookup('refund', caller, 'k1');
    await completer.stream(); // the kept record's change: a recheck after a backoff
    jest.restoreAllMocks();
    advanceClock(3_000 + 60_000);
    const second = await completer.rechecks();

    expect(first).toEqual(['unsettled']);
    // Its re-run failed now: the next is 30 s away (attempt 1's backoff), and the poll says so.
    expect(afterBlip).toMatchObject({ status: 'abandoned' });
    expect((afterBlip as { retryAfterMs: number }).retryAfterMs).toBeGreaterThan(29_000);
    expect((afterBlip as { retryAfterMs: number }).retryAfterMs).toBeLessThanOrEqual(30_000);
    // Two rechecks: the one the completer sent itself after the blip, and the one the kept record's
    // change brought; whichever comes first finishes it, the other finds nothing to do.
    expect([...second].sort()).toEqual(['finished', 'settled']);
    expect(await runtime.lookup('refund', caller, 'k1')).toMatchObject({ status: 'completed' });
    expect(await world.ledgerRows(caller.tenant)).toHaveLength(1);
  });

  it('gives up after maxAttempts: the call is stalled (the poll says so, nothing more is scheduled), and a retry with its key still finishes it', async () => {
    // Prepare: a provider that fails every attempt (down), a completer that re-runs a call once.
    const caller = identity();
    const invoice = await world.seedInvoice(caller.tenant);
    let down = true;
    let attempts = 0;
    const provider = {
      async refund(request: RefundRequest) {
        attempts += 1;
        if (down) throw Object.assign(new Error('provider down'), { name: 'TimeoutError' });
        return world.provider.refund(request);
      },
    };
    const tool = refundTool.bind({ ...world, provider });
    const onceRuntime = new ToolRuntime({
      client: world.client,
      tableName: TABLE,
      attributes: DEFAULT_RECORD_ATTRIBUTES,
      maxAttempts: 1,
    });
    const completer = completerFor({ ...world, provider }, { runtime: onceRuntime });
    await completer.stream();
    completer.queue.purge();
    const call = { idempotency_key: 'k1', invoice_id: invoice.invoice_id, amount: invoice.amount };

    // Act: attempt 1 (the caller) fails; the completer re-runs it once (attempt 2), fails; then gives up.
    const first = await runtime.invoke(tool, caller, call, deadline());
    await completer.stream();
    advanceClock(PAST_THE_FIRST_LOOK_MS);
    const rerun = await completer.rechecks();
    await completer.stream();
    // The runtime's maxAttempts is the completer's: its poll now says the next look gives up, not re-runs.
    const polledBeforeGiveUp = await onceRuntime.lookup('refund', caller, 'k1');
    jest.restoreAllMocks();
    advanceClock(PAST_THE_FIRST_LOOK_MS + 900_000);
    const givenUp = await completer.rechecks();
    await completer.stream(); // the give-up's own change: nothing is scheduled for it
    jest.restoreAllMocks();
    advanceClock(PAST_THE_FIRST_LOOK_MS + 1_800_000);
    const afterwards = await completer.rechecks();
    const polled = await runtime.lookup('refund', caller, 'k1');
    const attemptsWhileStalled = attempts;
    down = false;
    const retry = await runtime.invoke(tool, caller, call, deadline());

    // Assess
    expect(first).toMatchObject({ ok: false, error: { code: 'unavailable' } });
    expect(rerun).toEqual(['unsettled']);
    expect(polledBeforeGiveUp).toMatchObject({ status: 'abandoned', givesUp: 'attempts' });
    expect(givenUp).toContain('gave_up');
    expect(givenUp.filter((outcome) => outcome !== 'gave_up').every((outcome) => outcome === 'settled')).toBe(true);
    expect(afterwards).toEqual([]);
    expect(polled).toEqual({ status: 'stalled', reason: 'attempts' });
    expect(attemptsWhileStalled).toBe(2);
    expect(retry).toMatchObject({ ok: true, idempotent: false });
    expect(await runtime.lookup('refund', caller, 'k1')).toMatchObject({ status: 'completed' });
    expect(await world.ledgerRows(caller.tenant)).toHaveLength(1);
  });

  it('run as one pass that exits, every minute from cron (retrysafe complete), moves a call that fails every time to stalled on the record’s schedule — and every poll between says when (liveness)', async () => {
    // Prepare: a table of its own (a pass reads the whole stream from its trim horizon, as each run of
    // `retrysafe complete` does), a provider down for good, a clock the test moves a minute at a time.
    const table = `completer-cron-${randomUUID().slice(0, 8)}`;
    await world.client.send(new CreateTableCommand(createTableInput(IDEMPOTENCY_TABLE, table)));
    const cronRuntime = new ToolRuntime({
      client: world.client,
      tableName: table,
      attributes: DEFAULT_RECORD_ATTRIBUTES,
    });
    const caller = identity();
    const invoice = await world.seedInvoice(caller.tenant);
    const runs: number[] = [];
    const provider = {
      async refund(_request: RefundRequest): Promise<never> {
        runs.push(Date.now());
        throw Object.assign(new Error('provider down'), { name: 'TimeoutError' });
      },
    };
    const tool = refundTool.bind({ ...world, provider });
    let offsetMs = 0;
    const now = Date.now.bind(Date);
    jest.spyOn(Date, 'now').mockImplementation(() => now() + offsetMs);
    /** One `retrysafe complete`: a new feed (the stream from its start) and a new queue, one pass, gone. */
    async function cronRun(): Promise<number | undefined> {
      const queue = new LocalRecheckQueue();
      const feed = new LocalStreamFeed(streams, table);
      const completer = new Completer({
        client: world.client,
        runtime: cronRuntime,
        tools: [tool],
        queue,
        tableName: table,
        attributes: DEFAULT_RECORD_ATTRIBUTES,
      });
      await completerPass(completer, feed, queue, deadline());
      return queue.nextCallDueAt();
    }
    const call = { idempotency_key: 'k1', invoice_id: invoice.invoice_id, amount: invoice.amount };

    try {
      // Act: the caller's attempt fails; then a run every minute for two hours, and an agent that polls
      // whenever the last answer's `next` says.
      await cronRuntime.invoke(tool, caller, call, deadline());
      const polls: Array<{ atMs: number; status: string; afterMs?: number }> = [];
      let pollAtMs = Date.now();
      let lastDue: number | undefined;
      for (let minute = 1; minute <= 120; minute++) {
        offsetMs = minute * 60_000;
        lastDue = await cronRun();
        if (pollAtMs <= Date.now()) {
          const atMs = Date.now();
          const operation = await cronRuntime.lookup('refund', caller, 'k1');
          const afterMs = operation && 'retryAfterMs' in operation ? operation.retryAfterMs : undefined;
          polls.push({ atMs, status: operation?.status ?? 'none', ...(afterMs ? { afterMs } : {}) });
          if (afterMs !== undefined) pollAtMs = atMs + afterMs;
        }
        if (polls.at(-1)?.status === 'stalled') break;
      }

      // Assess: the caller's attempt and the completer's 8 re-runs (maxAttempts), each at the first run
      // at or after the time its record said (its lock's end, then 30 s, 60 s, … 900 s after each failure)…
      expect(runs).toHaveLength(9);
      const gaps = runs.slice(1).map((at, i) => at - runs[i]!);
      const due = [0, 30, 60, 120, 240, 480, 900, 900].map((seconds) => seconds * 1000);
      gaps.forEach((gap, i) => {
        expect(gap).toBeGreaterThanOrEqual(due[i]!);
        expect(gap).toBeLessThanOrEqual(due[i]! + 60_000 + 10_000); // a run a minute, and the test's own real time
      });
      // …then it is stalled within the bound the usage text states, and nothing more is due.
      expect(polls.at(-1)).toMatchObject({ status: 'stalled' });
      expect(runs.at(-1)! - runs[0]!).toBeLessThan(75 * 60_000);
      expect(lastDue).toBeUndefined();
      // An agent following `next` polls about once per re-run, not once a second (~3,000 polls before).
      expect(polls.length).toBeLessThan(40);
      // Each abandoned poll's wait ends when the re-run is due: never before it (the poll would find nothing
      // new), and no later than the run that re-runs it (a run a minute).
      for (const poll of polls.filter((p) => p.status === 'abandoned' && p.afterMs! > 1_000)) {
        const nextRun = runs.find((at) => at >= poll.atMs);
        if (nextRun === undefined) continue; // its last attempt's: what is due then is the give-up
        expect(nextRun).toBeGreaterThanOrEqual(poll.atMs + poll.afterMs! - 1_000);
        expect(nextRun).toBeLessThanOrEqual(poll.atMs + poll.afterMs! + 70_000);
      }
    } finally {
      jest.restoreAllMocks();
      await world.client.send(new DeleteTableCommand({ TableName: table }));
    }
  }, 120_000);

  it('costs nothing for calls that completed within a batch, and rechecks one still running when its lock ends', async () => {
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
    await completer.stream();
    completer.queue.purge();

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
      deadline(5_000),
    );
    await started.opened;
    const read = await completer.stream();
    const scheduled = completer.queue.size;
    hold.open();
    await running;
    advanceClock(7_000);
    const outcomes = await completer.rechecks();

    expect(read).toBeGreaterThanOrEqual(3); // k1's claim and result, k2's claim
    expect(scheduled).toBe(1); // k1 completed inside the batch: nothing; k2 in flight: one recheck
    expect(outcomes).toEqual(['settled']); // k2 finished by itself meanwhile
    expect(await world.ledgerRows(caller.tenant)).toHaveLength(2);
  });

  it('never brings back a record erased after it saw it: it takes over only the exact claim it read', async () => {
    const caller = identity();
    const invoice = await world.seedInvoice(caller.tenant);
    const provider = { refund: () => new Promise<never>(() => {}) }; // the worker dies at the provider
    const tool = refundTool.bind({ ...world, provider });
    const completer = completerFor({ ...world, provider });
    await completer.stream();
    completer.queue.purge();
    void runtime.invoke(
      tool,
      caller,
      { idempotency_key: 'k1', invoice_id: invoice.invoice_id, amount: invoice.amount },
      deadline(1_000),
    );
    await new Promise((resolve) => setTimeout(resolve, 50));
    await completer.stream();
    advanceClock(3_000);
    // Meanwhile the record is gone (deleted by hand, as an erase before these rules would have).
    const items = await world.client.send(new ScanCommand({ TableName: TABLE, ConsistentRead: true }));
    const record = (items.Items ?? []).find((item) => item.tenant?.S === caller.tenant)!;
    await world.client.send(new DeleteItemCommand({ TableName: TABLE, Key: { id: record.id! } }));

    const outcomes = await completer.rechecks();

    expect(outcomes).toEqual(['settled']);
    const after = await world.client.send(new ScanCommand({ TableName: TABLE, ConsistentRead: true }));
    expect((after.Items ?? []).filter((item) => item.tenant?.S === caller.tenant)).toEqual([]);
  });
});
