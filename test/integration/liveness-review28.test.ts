// Rule 8 (docs/state-machine.md): every call ends, in a time its answers state.
/**
 * Review 28 of 40337c2 and 1d29935 (`expiresBeforeRerun` by `LATEST_LOOK_AFTER_DUE_MS`, `nextLookAtMs`'s
 * stream window for every park, `parkLimitMs`'s wait look). Each `describe` holds one finding; its test fails
 * on 1d29935 and passes once the finding is fixed: F1 (`expiresBeforeRerun` with `>=`, the wait look 61 s
 * before the last look), F2 (the wait look only behind a call a resend may move: `movable`), F3 (the stream
 * window only for calls none of whose attempts ran, as before 1d29935 — review 27's F3 is left open), F4
 * (`onRecheck` answers `later` before `completerLooksAtMs`).
 */
import { marshall } from '@aws-sdk/util-dynamodb';
import { nextAfterRead } from '../../lib/api/next-step';
import {
  completerLooksAtMs,
  LATEST_LOOK_AFTER_DUE_MS,
  lastLookMs,
  STREAM_BATCHING_WINDOW_SECONDS,
  WAIT_LOOK_BEFORE_LAST_LOOK_MS,
} from '../../lib/idempotency/backoff';
import type { Completer, Recheck } from '../../lib/idempotency/completer';
import { expiresAtSOf } from '../../lib/idempotency/derivation';
import { InFlightError } from '../../lib/idempotency/errors';
import type { ToolRuntime } from '../../lib/idempotency/runtime';
import { readOperation } from '../../lib/reads/operation';
import { callRecords } from '../helpers/call-records';
import { livenessWorld } from '../helpers/liveness-world';
import { deadline, identity, type ProtocolWorld } from '../helpers/protocol-world';
import { noteTool } from '../helpers/tools';

const live = livenessWorld('liveness-review28');
const { clockAt, completerFor } = live;
let world: ProtocolWorld;
let runtime: ToolRuntime;
beforeAll(() => {
  ({ world, runtime } = live);
});

const sendNote = noteTool('send_note', async (a) => ({
  receipt: { note_id: 'note_1', text: a.text },
  replayed: false,
})).tool;

/** The stack's stream: `item`'s image, delivered to `completer.onStream` now. */
async function streamImage(completer: Completer, recordKey: string, item: Record<string, unknown>) {
  return completer.onStream([
    {
      eventName: 'MODIFY',
      dynamodb: {
        Keys: marshall({ id: recordKey }),
        NewImage: marshall(item, { removeUndefinedValues: true }),
        SequenceNumber: String(Date.now()),
      },
    },
  ]);
}

/** An abandoned send_note call (attempt `attempt`, its tool ran and failed: not unrun) whose lock ends at `lockEndsMs(expiresAtS)`. */
async function abandonedAt(lockEndsMs: (expiresAtS: number) => number, attempt = 1) {
  const records = callRecords(world, runtime);
  const call = await records.abandonedCall();
  const item = await records.itemOf(call.recordKey);
  const expiresAtS = Number(item.expiration);
  await records.setAttributes(call.recordKey, { attempt, in_progress_expiration: lockEndsMs(expiresAtS) });
  return { ...call, expiresAtS, lastLook: lastLookMs(expiresAtS), itemOf: records.itemOf, records };
}

async function poll(c: { caller: ReturnType<typeof identity>; key: string }, tool = 'send_note') {
  const read = (await readOperation({ runtime, toolNames: [tool] }, c.caller, tool, c.key)) as {
    status: string;
    retry_after_ms?: number;
    gives_up?: string;
  };
  const next = nextAfterRead(read as never);
  const runs = read.gives_up === undefined && /re-runs it|starts it/.test(next.message ?? '');
  return { read, says: runs ? 'runs it' : 'gives up' };
}

/**
 * H (parked by its provider for `holderWaitMs`), then Q asked a second later with the same arguments: queued
 * behind H. H is asked under `holderTtlSeconds` (a deploy lowered the TTL to 1 h before Q was asked).
 */
async function queuedBehindParkedHolder(
  holderWait: (qLastLook: number, t0: number) => number,
  holderTtlSeconds = 3_600,
) {
  let runs = 0;
  let holderWaitMs = 0;
  const name = `window_${Math.random().toString(36).slice(2, 10)}`;
  const toolWith = (ttlSeconds: number) =>
    noteTool(
      name,
      async (a) => {
        runs += 1;
        if (runs === 1) throw new InFlightError('the provider still runs this key', holderWaitMs);
        return { receipt: { note_id: `note_${runs}`, text: a.text }, replayed: false };
      },
      { dedupeWindowSeconds: 600, ttlSeconds },
    ).tool;
  const tool = toolWith(3_600);
  const holderTool = toolWith(holderTtlSeconds);
  const caller = identity();
  const t0 = Date.now();
  const qExpiresAtS = expiresAtSOf(3_600, t0 + 1_000);
  const qLastLook = lastLookMs(qExpiresAtS);
  holderWaitMs = holderWait(qLastLook, t0);
  clockAt(t0);
  expect(await runtime.invoke(holderTool, caller, { idempotency_key: 'h', text: 'same' }, deadline())).toMatchObject({
    status: 'pending',
  });
  clockAt(t0 + 1_000);
  expect(await runtime.invoke(tool, caller, { idempotency_key: 'q', text: 'same' }, deadline())).toMatchObject({
    status: 'pending',
  });
  const keys = (await world.idempotencyRecordKeys(caller.tenant)).map((k) => k.id);
  const items = await Promise.all(keys.map((key) => callRecords(world, runtime).itemOf(key)));
  const q = items.find((item) => item.waited_on !== undefined)!;
  const h = items.find((item) => item !== q && item.attempt !== undefined)!;
  expect(Number(q.expiration)).toBe(qExpiresAtS);
  const itemOf = (key: unknown) => callRecords(world, runtime).itemOf(String(key));
  return { tool, caller, q, h, qLastLook, t0, itemOf, runs: () => runs };
}

describe('review28 F1: `expiresBeforeRerun` keeps a call due exactly LATEST_LOOK_AFTER_DUE_MS before its last look (`>`), `tooLateToRerun` gives it up at a look that minute late (`>=`)', () => {
  it('a call whose attempt 2 is due exactly a minute before its last look is told “re-runs it”; a completer looking the minute late LATEST_LOOK_AFTER_DUE_MS allows (cron) gives it up', async () => {
    // Attempt 2 (backoff 30 s), due exactly LATEST_LOOK_AFTER_DUE_MS before its last look.
    const c = await abandonedAt((expiresAtS) => lastLookMs(expiresAtS) - LATEST_LOOK_AFTER_DUE_MS - 30_000, 2);
    const dueMs = c.lastLook - LATEST_LOOK_AFTER_DUE_MS;
    clockAt(dueMs - 5_000);
    const { read, says } = await poll(c);
    expect(read).toMatchObject({ status: 'abandoned', retry_after_ms: 5_000 });
    // The latest a shipped completer may look after a due time (the constant's own definition): cron's run.
    clockAt(dueMs + LATEST_LOOK_AFTER_DUE_MS);
    const outcome = await completerFor([sendNote]).onRecheck({ key: c.recordKey, claim: c.claim }, deadline(60_000));
    const did = outcome === 'gave_up' ? 'gives up' : 'runs it';
    expect({ answers: says, completer: did }).toEqual({ answers: did, completer: did });
  });
});

describe('review28 F2: the wait look re-runs a waiter whose holder is parked past it — nothing can have changed (a parked holder changes only at its lock end): an extra takeover and park, then given up anyway', () => {
  it('Q queued behind H parked by its provider past Q’s last look is parked until that last look, not re-run at its wait look', async () => {
    // H asked under a 2 h TTL before a deploy lowered it (its provider's wait may end past Q's last look only
    // so: a park ends its lock by its own last look, review 31).
    const w = await queuedBehindParkedHolder((qLastLook, t0) => qLastLook + 600_000 - t0, 7_200);
    const waitLook = w.qLastLook - WAIT_LOOK_BEFORE_LAST_LOOK_MS;
    // H is live and parked past Q's last look: nobody runs it, its resend only attaches, erase keeps it.
    const hEndsMs = Number(w.h.in_progress_expiration);
    expect(hEndsMs).toBeGreaterThan(w.qLastLook);
    expect(w.h.parked_claim).toBe(w.h.claim_id);
    // The wait look (the stack's recheck, a second after it).
    clockAt(waitLook + 1_000);
    const outcome = await completerFor([w.tool]).onRecheck(
      { key: String(w.q.id), claim: String(w.q.claim_id) },
      deadline(60_000),
    );
    const after = await w.itemOf(w.q.id);
    // Fixed: Q is still parked (live) at its wait look — nothing was written; now: re-run (takeover, intent and
    // holder read, park: 'unsettled', attempt 2), and given up at its next look all the same.
    expect({ outcome, attempt: Number(after.attempt) }).toEqual({ outcome: 'later', attempt: 1 });
  });
});

describe('review28 F3: `nextLookAtMs` adds the stream window to every park, also one whose lock ends in the future (a provider wait): the stack saw that park long before, and re-runs it at its lock end', () => {
  it('a first attempt parked by its provider for 2 min: the stack re-runs it when its poll said, the stream’s window after the park’s end (review 29: one look time for every park, stated and kept, rather than a hint 10 s late)', async () => {
    let runs = 0;
    const { tool } = noteTool(`wait_${Math.random().toString(36).slice(2, 10)}`, async (a) => {
      runs += 1;
      if (runs === 1) throw new InFlightError('the provider still runs this key', 120_000);
      return { receipt: { note_id: `note_${runs}`, text: a.text }, replayed: false };
    });
    const caller = identity();
    const t0 = Date.now();
    clockAt(t0);
    expect(await runtime.invoke(tool, caller, { idempotency_key: 'p', text: 'x' }, deadline())).toMatchObject({
      status: 'pending',
    });
    const [record] = await world.idempotencyRecordKeys(caller.tenant);
    const records = callRecords(world, runtime);
    const item = await records.itemOf(record!.id);
    const endsMs = t0 + 120_000;
    expect(item).toMatchObject({ attempt: 1, in_progress_expiration: endsMs, parked_claim: item.claim_id });
    // The stack: the park's image reaches the completer within the batching window of the park.
    clockAt(t0 + 10_000);
    const sent: Recheck[] = [];
    const completer = completerFor([tool], sent);
    await streamImage(completer, record!.id, item);
    const lookMs = endsMs + STREAM_BATCHING_WINDOW_SECONDS * 1000;
    expect(sent).toMatchObject([{ delaySeconds: 120, dueAtMs: lookMs }]);
    // Just past the park's end: abandoned, attempt 1, due the stream's window after its lock's end.
    clockAt(endsMs + 1);
    const { read, says } = await poll({ caller, key: 'p' }, tool.name);
    expect(read).toMatchObject({ status: 'abandoned' });
    expect(says).toBe('runs it');
    // A recheck before then (delivered early) is sent again for that time; at it, the call is re-run.
    clockAt(endsMs + 1_000);
    expect(await completer.onRecheck({ key: record!.id, claim: String(item.claim_id) }, deadline(60_000))).toBe(
      'later',
    );
    clockAt(lookMs);
    expect(await completer.onRecheck({ key: record!.id, claim: String(item.claim_id) }, deadline(60_000))).toBe(
      'finished',
    );
    // The liveness table: an abandoned call's answers hint "exactly that due time (at least 1 s)".
    expect(endsMs + 1 + (read.retry_after_ms ?? 0)).toBe(lookMs);
  });
});

describe('review28 F4: a recheck that comes before the stated look (SQS’s 900 s cap) gives up a call due within a minute of its last look at once — earlier than every answer said', () => {
  it('attempt 7 parked by its provider for 10 min (due 15 min after that): the capped recheck gives it up ~10 min before the stated give-up', async () => {
    // Attempt 7: backoff 900 s. Parked (live) until E; due E + 900 s, 30 s before its last look.
    const parkedAtMs = Date.now();
    const endsMs = parkedAtMs + 600_000;
    const dueMs = endsMs + 900_000;
    const c = await abandonedAt(() => endsMs, 7);
    const expiresAtS = Math.ceil((dueMs + 30_000 + 70_000) / 1000);
    await c.records.setAttributes(c.recordKey, { expiration: expiresAtS });
    const lastLook = lastLookMs(expiresAtS);
    expect(dueMs + LATEST_LOOK_AFTER_DUE_MS).toBeGreaterThan(lastLook);
    // The stack: the park's image now — its look (its give-up) is due at `stated`, beyond SQS's 15 min.
    clockAt(parkedAtMs);
    const sent: Recheck[] = [];
    const completer = completerFor([sendNote], sent);
    const image = await c.itemOf(c.recordKey);
    await streamImage(completer, c.recordKey, image);
    const stated = completerLooksAtMs({
      lockEndsMs: endsMs,
      attempt: 7,
      expiresAtS,
    });
    expect(sent).toMatchObject([{ delaySeconds: 900, dueAtMs: stated }]);
    // What every answer says a second before the capped delivery: given up at `stated`.
    clockAt(parkedAtMs + 899_000);
    const { read } = await poll(c);
    expect(read).toMatchObject({ status: 'abandoned', gives_up: 'expiring', retry_after_ms: stated - Date.now() });
    // SQS delivers the capped recheck: not the stated look — looked at again then, not given up now.
    clockAt(parkedAtMs + 900_000);
    const outcome = await completer.onRecheck({ key: c.recordKey, claim: c.claim }, deadline(60_000));
    expect({ outcome, givenUpEarlyByMs: outcome === 'gave_up' ? stated - Date.now() : 0 }).toEqual({
      outcome: 'later',
      givenUpEarlyByMs: 0,
    });
  });
});
