// Rule 8 (docs/state-machine.md): every call ends, in a time its answers state.
/**
 * Review 26 of 7604d91..fc9911c (review 25's fixes). `tooLateToRerun` gives up an abandoned call whenever the
 * completer's look is at or past the call's last look (`now >= lastLookMs`), whatever its due time; every
 * answer (`givesUpAtNextLook`: the record alone) still said the server re-runs it. Since fc9911c this held
 * under `retrysafe dev`'s 10 s lock too, which on 7604d91 re-ran such a call (its bound was TTL − 10 s − 10 s).
 * Fixed at the answers' rule: `givesUpAtNextLook` judges the look at the wait the answer gives
 * (`nextLookAtMs`), and a re-run due less than `LOOK_GRANULARITY_MS` before the last look is given up by the
 * record alone (`expiresBeforeRerun`).
 */
import { nextAfterRead } from '../../lib/api/next-step';
import { lastLookMs } from '../../lib/idempotency/backoff';
import { Completer } from '../../lib/idempotency/completer';
import { inFlightCallOf } from '../../lib/idempotency/in-flight';
import { DEFAULT_RECORD_ATTRIBUTES } from '../../lib/idempotency/protocol/record';
import type { ToolRuntime } from '../../lib/idempotency/runtime';
import { taskOf } from '../../lib/idempotency/task';
import { readOperation } from '../../lib/reads/operation';
import { callRecords } from '../helpers/call-records';
import { livenessWorld } from '../helpers/liveness-world';
import { deadline, type ProtocolWorld } from '../helpers/protocol-world';
import { noteTool } from '../helpers/tools';

const live = livenessWorld('liveness-review26');
const { clockAt } = live;
let world: ProtocolWorld;
let runtime: ToolRuntime;
beforeAll(() => {
  ({ world, runtime } = live);
});

const sendNote = noteTool('send_note', async (a) => ({
  receipt: { note_id: 'note_1', text: a.text },
  replayed: false,
})).tool;

function completer() {
  return new Completer({
    client: world.client,
    runtime,
    tools: [sendNote],
    queue: { send: async () => undefined },
    tableName: world.idempotencyTable.tableName,
    attributes: DEFAULT_RECORD_ATTRIBUTES,
  });
}

/** An abandoned call (attempt 1, or 2: its backoff 30 s) whose re-run is due `beforeMs` before its last look. */
async function dueBeforeItsLastLook(beforeMs: number, attempt = 1) {
  const records = callRecords(world, runtime);
  const call = await records.abandonedCall();
  const item = await records.itemOf(call.recordKey);
  const expiresAtS = Number(item.expiration);
  const backoffMs = attempt > 1 ? 30_000 : 0;
  await records.setAttributes(call.recordKey, {
    attempt,
    in_progress_expiration: lastLookMs(expiresAtS) - beforeMs - backoffMs,
  });
  return { ...call, expiresAtS, itemOf: records.itemOf };
}

describe.each([
  ['retrysafe dev (10 s lock; re-ran it on 7604d91)', 10_000],
  ['the stack / retrysafe complete (60 s lock)', 60_000],
])('review26 F1: a poll at or past the last look of an abandoned call due before it — %s', (_name, lockMs) => {
  it('get_operation, its next, the MCP task and `retrysafe calls` say what the completer does at the wait given', async () => {
    // Due 30 s before its last look; no completer looked by then (a `retrysafe dev` pass, a cron run of
    // `retrysafe complete` a minute apart, a recheck SQS delivered late): polled 1 s past its last look.
    const c = await dueBeforeItsLastLook(30_000);
    clockAt(lastLookMs(c.expiresAtS) + 1_000);
    const read = await readOperation({ runtime, toolNames: ['send_note'] }, c.caller, 'send_note', c.key);
    const next = nextAfterRead(read as never);
    const record = await runtime.readCall('send_note', c.caller, c.key);
    const task = taskOf(record, { nowMs: Date.now(), clientKey: c.key, ttlSeconds: 3_600, maxAttempts: 8 });
    const listed = inFlightCallOf(await c.itemOf(c.recordKey), Date.now(), {}, 8);
    expect(read).toMatchObject({ status: 'abandoned' });
    const wait = (read as { retry_after_ms: number }).retry_after_ms;

    // The completer's look at the wait the answer gave.
    clockAt(Date.now() + wait);
    const outcome = await completer().onRecheck({ key: c.recordKey, claim: c.claim }, deadline(lockMs));
    const did = outcome === 'gave_up' ? 'gives up' : 'runs it';
    const said = (g: unknown) => (g === undefined ? 'runs it' : 'gives up');
    expect({
      outcome,
      get_operation: said((read as { gives_up?: string }).gives_up),
      next: /re-runs it/.test(next.message ?? '') ? 'runs it' : 'gives up',
      task: said((task as { givesUp?: string }).givesUp),
      calls: said(listed?.givesUp),
    }).toEqual({ outcome, get_operation: did, next: did, task: did, calls: did });
  });
});

describe.each([
  ['retrysafe dev (10 s lock; re-ran it on 7604d91)', 10_000],
  ['the stack / retrysafe complete (60 s lock)', 60_000],
])(
  'review26 F1 (no late completer): the answers’ own 1 s floor carries the look past the last look — %s',
  (_name, lockMs) => {
    it('a call (attempt 2) due 300 ms before its last look, polled 100 ms before it is due: “re-runs it in 1 s”, the completer then gives it up', async () => {
      const c = await dueBeforeItsLastLook(300, 2);
      clockAt(lastLookMs(c.expiresAtS) - 400);
      const read = await readOperation({ runtime, toolNames: ['send_note'] }, c.caller, 'send_note', c.key);
      const next = nextAfterRead(read as never);
      expect(read).toMatchObject({ status: 'abandoned', retry_after_ms: 1_000 });
      clockAt(Date.now() + (read as { retry_after_ms: number }).retry_after_ms);
      const outcome = await completer().onRecheck({ key: c.recordKey, claim: c.claim }, deadline(lockMs));
      expect({
        outcome,
        next: /re-runs it/.test(next.message ?? '') ? 'runs it' : 'gives up',
      }).toEqual({ outcome, next: outcome === 'gave_up' ? 'gives up' : 'runs it' });
    });
  },
);
