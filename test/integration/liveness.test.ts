// Rule 8 (docs/state-machine.md): every call ends, in a time its answers state.
import { randomUUID } from 'node:crypto';
import * as z from 'zod/mini';
import { eraseTenant } from '../../lib/admin/erase-tenant';
import { nextAfterRead } from '../../lib/api/next-step';
import { backoffSeconds, completerLooksAtMs, dueAfterParkMs } from '../../lib/idempotency/backoff';
import { InFlightError } from '../../lib/idempotency/errors';
import { callRecordOf, DEFAULT_RECORD_ATTRIBUTES, STATUS } from '../../lib/idempotency/protocol/record';
import type { ToolRuntime } from '../../lib/idempotency/runtime';
import { readTask } from '../../lib/idempotency/task';
import { defineTool } from '../../lib/idempotency/tool';
import { ABANDONED_HINT, GIVES_UP_HINTS, readOperation } from '../../lib/reads/operation';
import { callRecords } from '../helpers/call-records';
import { beforeNext, throttled } from '../helpers/intercept';
import { completerRecordingOn } from '../helpers/no-effect';
import { ownIdempotencyTable } from '../helpers/own-table';
import { createProtocolWorld, deadline, identity, type ProtocolWorld } from '../helpers/protocol-world';
import { noteTool, tightenedSendNote } from '../helpers/tools';

/**
 * Liveness (docs/state-machine.md, rule 8 and "Liveness"): what the completer does with a call it cannot
 * re-run, near its TTL, or whose next re-run falls past it, and what each answer then hints. Found by a
 * fresh-eye review of issue 33, each as a failing test first; the four left open are `test.failing` (they
 * start failing once fixed) and listed under "Left open" in the Liveness section.
 */
// A table of its own: it erases a tenant and counts what it finds, and a tenant's erase takes every
// record with no tenant as its own (rule 6) — other suites write such records on the shared table.
ownIdempotencyTable('liveness');
let world: ProtocolWorld;
let runtime: ToolRuntime;
beforeAll(() => {
  world = createProtocolWorld();
  runtime = world.idempotencyRuntime();
});
afterAll(() => world.destroy());
afterEach(() => jest.restoreAllMocks());

const completerWith = (tools: ReturnType<typeof noteTool>['tool'][], on: ToolRuntime = runtime) =>
  completerRecordingOn(world, on, tools);

/** The call records these tests set up (the world and runtime exist once `beforeAll` ran). */
const abandonedCall = (text?: string) => callRecords(world, runtime).abandonedCall(text);
const itemOf = (key: string) => callRecords(world, runtime).itemOf(key);
const setAttributes = (key: string, values: Record<string, unknown>) =>
  callRecords(world, runtime).setAttributes(key, values);

/** Past the re-run of a first attempt parked now (`abandonedCall`): its lock's end, and the stream's window after it. */
const PAST_A_PARK_MS = 1_000 + dueAfterParkMs(1);

/** Moves every `Date.now()` reader `byMs` ahead of now. */
function clockAhead(byMs: number): void {
  const now = Date.now();
  jest.spyOn(Date, 'now').mockImplementation(() => now + byMs);
}

/** send_note as a later deploy defines it: a new defaulted argument (the stored call's fingerprint no longer matches). */
function widenedSendNote() {
  const execute = jest.fn(async () => ({ receipt: { note_id: 'n' }, replayed: false }));
  const tool = defineTool({
    name: 'send_note',
    description: 'send_note after a deploy: a new argument with a default',
    args: z.strictObject({ text: z.string(), urgent: z._default(z.boolean(), false) }),
    annotations: { destructiveHint: false, openWorldHint: false },
    execute,
  });
  return { tool, execute };
}

describe('liveness: a call the completer cannot re-run is stalled with its reason, never left abandoned (rule 8, Liveness table row "its stored call unreadable")', () => {
  it('stalls (unreadable_call) an abandoned call whose stored arguments no longer parse under the served tool, instead of dropping its recheck (REVIEW: fails)', async () => {
    const { tool, execute } = tightenedSendNote();
    const { completer, sends } = completerWith([tool as never]);
    const call = await abandonedCall('hi'); // 'hi' is shorter than the deployed tool's 5 characters
    clockAhead(PAST_A_PARK_MS);

    const outcome = await completer.onRecheck({ key: call.recordKey, claim: call.claim }, deadline());

    expect(execute).not.toHaveBeenCalled();
    // What happens today: 'finished' (the re-run answered invalid_args), no recheck sent, nothing written —
    // so no stream image either: the call stays abandoned until its TTL, its polls saying the server re-runs it.
    const after = await itemOf(call.recordKey);
    const poll = await runtime.lookup('send_note', call.caller, call.key);
    expect({ outcome, stalled: after.stalled_claim, reason: after.stalled_reason, poll: poll?.status }).toEqual({
      outcome: 'gave_up',
      stalled: call.claim,
      reason: 'unreadable_call',
      poll: 'stalled',
    });
    expect(sends).toEqual([]);
  });

  it('stalls an abandoned call whose stored arguments now fingerprint differently (a defaulted argument added), instead of dropping its recheck on `conflict` (REVIEW: fails)', async () => {
    const { tool, execute } = widenedSendNote();
    const { completer, sends } = completerWith([tool as never]);
    const call = await abandonedCall('hi');
    clockAhead(PAST_A_PARK_MS);

    const outcome = await completer.onRecheck({ key: call.recordKey, claim: call.claim }, deadline());

    expect(execute).not.toHaveBeenCalled();
    const after = await itemOf(call.recordKey);
    const poll = await runtime.lookup('send_note', call.caller, call.key);
    // Neither re-run, nor stalled, nor rechecked: stranded (today: 'finished', no send, the record untouched).
    const stranded = outcome === 'finished' && sends.length === 0 && poll?.status === 'abandoned';
    expect({ outcome, stranded, stalled: after.stalled_claim === call.claim }).toEqual({
      outcome: 'gave_up',
      stranded: false,
      stalled: true,
    });
  });
});

describe('liveness: an abandoned call in its record’s last lock-length — its next change is its TTL (Liveness table row "last lock-length")', () => {
  /** Abandoned (attempt 1, lock ended), its TTL `ttlInS` away: no takeover with a 60 s lock may pass rule 2. */
  async function nearTtlCall(ttlInS: number) {
    const call = await abandonedCall();
    clockAhead(PAST_A_PARK_MS);
    await setAttributes(call.recordKey, { expiration: Math.floor(Date.now() / 1000) + ttlInS });
    return call;
  }

  it('the completer cannot re-run it before the TTL (rule 2 would refuse its takeover): it gives it up now — stalled, `expiring` — rather than let it expire unreported', async () => {
    const { tool, execute } = noteTool('send_note');
    const { completer } = completerWith([tool]);
    const call = await nearTtlCall(40);

    const outcome = await completer.onRecheck({ key: call.recordKey, claim: call.claim }, deadline(60_000));

    expect(outcome).toBe('gave_up');
    expect(execute).not.toHaveBeenCalled();
    expect(await itemOf(call.recordKey)).toMatchObject({
      status: STATUS.inProgress,
      claim_id: call.claim,
      attempt: 1,
      stalled_claim: call.claim,
      stalled_reason: 'expiring',
    });
  });

  it('get_operation says it is stalled (`expiring`: only a resend finishes it) once the completer looked — not "abandoned, ask again in 1 s" until the TTL', async () => {
    const { tool } = noteTool('send_note');
    const { completer } = completerWith([tool]);
    const call = await nearTtlCall(40);
    await completer.onRecheck({ key: call.recordKey, claim: call.claim }, deadline(60_000));

    const poll = await runtime.lookup('send_note', call.caller, call.key);

    expect(poll).toEqual({ status: 'stalled', reason: 'expiring' });
  });

  it('a resend refused near the TTL answers `pending` with a wait that reaches the TTL, not 1 s', async () => {
    const { tool, execute } = noteTool('send_note');
    const call = await nearTtlCall(40);

    // The caller's resend with a 60 s lock: its takeover would end past the TTL − 10 s, so it is refused.
    const answer = await runtime.invoke(tool, call.caller, { idempotency_key: call.key, text: 'hi' }, deadline(60_000));

    expect(execute).not.toHaveBeenCalled();
    expect(answer).toMatchObject({ ok: false, status: 'pending' });
    const ttlMs = ((await itemOf(call.recordKey)).expiration as number) * 1000;
    // Today: retry_after_ms 1000 (retryAfterMs caps every `atMs` at a second) though nothing changes for ~40 s.
    expect((answer as { retry_after_ms: number }).retry_after_ms).toBeGreaterThanOrEqual(ttlMs - Date.now() - 1_000);
  });
});

describe('liveness: a call parked for a provider’s wait changes only at its lock’s end (rule 8; events table "provider still running the key": nobody runs it before)', () => {
  it('get_operation on a parked call hints the provider’s wait the call itself was told, not ≤ 1 s', async () => {
    const caller = identity();
    const key = `k-${randomUUID()}`;
    const { tool } = noteTool('send_note', async () => {
      throw new InFlightError('the provider still runs this key', 20_000);
    });

    const answer = await runtime.invoke(tool, caller, { idempotency_key: key, text: 'hi' }, deadline());
    const poll = await runtime.lookup('send_note', caller, key);
    const resend = await runtime.invoke(tool, caller, { idempotency_key: key, text: 'hi' }, deadline());

    // The call's own answer: pending for the provider's 20 s — nobody runs it before (its record parked till then).
    expect(answer).toMatchObject({ ok: false, status: 'pending', retry_after_ms: 20_000 });
    // Today the poll (and a resend, refused as live) say ≤ 1 s: ~20 polls that cannot see a change.
    expect(poll).toMatchObject({ status: 'pending' });
    expect((poll as { retryAfterMs: number }).retryAfterMs).toBeGreaterThanOrEqual(19_000);
    expect((resend as { retry_after_ms: number }).retry_after_ms).toBeGreaterThanOrEqual(19_000);
  });
});

describe('liveness: the completer’s next look after a re-run it could not start is what the poll hints (rule 8)', () => {
  it.failing('after a re-run whose takeover failed transiently (nothing written), get_operation hints the completer’s next look (30 s), not 1 s (known, not fixed yet: docs/state-machine.md Liveness, “Left open”)', async () => {
    const { tool, execute } = noteTool('send_note');
    const { completer, sends } = completerWith([tool]);
    const call = await abandonedCall();
    clockAhead(PAST_A_PARK_MS);
    // The completer's takeover (its UpdateItem) is throttled: nothing is written, the record stays as read.
    beforeNext(world.client, 'UpdateItemCommand', async () => {
      throw throttled();
    });

    const outcome = await completer.onRecheck({ key: call.recordKey, claim: call.claim }, deadline());
    const poll = await runtime.lookup('send_note', call.caller, call.key);

    expect(outcome).toBe('unsettled');
    expect(execute).not.toHaveBeenCalled();
    const nextLook = sends.flat()[0]!.dueAtMs!;
    expect(nextLook - Date.now()).toBeGreaterThanOrEqual(29_000);
    // Today: 1000 ms (the record's due time has passed), though the completer looks again in 30 s.
    expect((poll as { retryAfterMs: number }).retryAfterMs).toBeGreaterThanOrEqual(nextLook - Date.now() - 1_000);
  });
});

describe('rule 6: erase’s wait is bounded by the completer’s schedule, not by the records’ TTL', () => {
  it('erase with the app’s tables completes once the completer looked at a call it cannot re-run (stored arguments the served tool refuses) — not deferred with retryAfter “now” until the TTL (REVIEW: fails)', async () => {
    const { tool } = tightenedSendNote();
    const { completer } = completerWith([tool as never]);
    const call = await abandonedCall('hi');
    clockAhead(PAST_A_PARK_MS);
    await completer.onRecheck({ key: call.recordKey, claim: call.claim }, deadline());

    const report = await eraseTenant(
      world.client,
      { tenant: call.caller.tenant, includeDomain: true },
      process.env,
      {},
      [{ name: 'send_note', access: {} }],
    );

    // Today: { complete: false, callsInFlight: { abandoned: 1 }, retryAfter: now } on every run until the
    // record's TTL — the completer dropped its recheck, so the call never stalls and erase never closes it.
    expect({ complete: report.complete, callsInFlight: report.callsInFlight }).toEqual({
      complete: true,
      callsInFlight: {},
    });
  });
});

describe('liveness: what an abandoned call’s answer says happens at its due time is what the completer does (rule 8, Liveness table rows "attempt ≤ / > maxAttempts")', () => {
  // The answer and the completer decide by one rule (`givesUpAtNextLook`): the attempts that ran or failed,
  // not the queued ones, against the runtime's maxAttempts (MAX_ATTEMPTS, 8, by default) — the completer
  // reads it from the runtime it runs calls through, so the two cannot differ (review 24, F2: a completer's
  // own maxAttempts, 3 or 12, was not what the answers read).
  it.each([
    ['attempt 8: re-run at its due time', { attempt: 8 }, undefined, 'finished', false],
    ['attempt 9, its attempts used up: stalled at its due time', { attempt: 9 }, undefined, 'gave_up', true],
    [
      'attempt 9, one of them queued (8 ran or failed): re-run at its due time',
      { attempt: 9, queued_attempts: 1 },
      undefined,
      'finished',
      false,
    ],
    ['maxAttempts 3, attempt 4: stalled at its due time', { attempt: 4 }, 3, 'gave_up', true],
    ['maxAttempts 12, attempt 9: re-run at its due time', { attempt: 9 }, 12, 'finished', false],
  ] as const)(
    '%s — and its poll, next step, task and hint say so',
    async (_label, attributes, maxAttempts, atDueTime, exhausted) => {
      const { tool, execute } = noteTool('send_note');
      const on = maxAttempts === undefined ? runtime : world.idempotencyRuntime({ maxAttempts });
      const { completer } = completerWith([tool], on);
      const call = await abandonedCall();
      await setAttributes(call.recordKey, attributes);

      const poll = await on.lookup('send_note', call.caller, call.key);
      const read = await readOperation({ runtime: on, toolNames: ['send_note'] }, call.caller, 'send_note', call.key);
      const task = await readTask(on, tool, call.caller, call.key);
      const wait = (poll as { retryAfterMs: number }).retryAfterMs;
      const next = nextAfterRead(read as never);
      clockAhead(1_000 + dueAfterParkMs(attributes.attempt));
      const atDue = await completer.onRecheck({ key: call.recordKey, claim: call.claim }, deadline());

      expect(atDue).toBe(atDueTime);
      expect(execute).toHaveBeenCalledTimes(atDueTime === 'finished' ? 1 : 0);
      // The wait is the due time either way: the state changes then (re-run, or stalled).
      expect(wait).toBeGreaterThanOrEqual(backoffSeconds(attributes.attempt - 1) * 1000 - 1_000);
      expect(next.after_ms).toBe((read as { retry_after_ms: number }).retry_after_ms);
      if (exhausted) {
        expect(poll).toMatchObject({ status: 'abandoned', givesUp: 'attempts' });
        expect(read).toMatchObject({ status: 'abandoned', gives_up: 'attempts', hint: GIVES_UP_HINTS.attempts });
        expect(task).toMatchObject({ status: 'working', state: 'abandoned', givesUp: 'attempts' });
        expect(next.message).toMatch(/stops retrying it in .* \(it is then stalled\)\. Call the write again/);
        // Nothing promises a re-run that will not come.
        expect(JSON.stringify([read, next])).not.toMatch(/re-runs it/);
      } else {
        expect(poll).not.toHaveProperty('givesUp');
        expect(read).toMatchObject({ status: 'abandoned', hint: ABANDONED_HINT });
        expect(read).not.toHaveProperty('gives_up');
        expect(task).not.toHaveProperty('givesUp');
        expect(task).not.toHaveProperty('note');
        expect(next.message).toMatch(/the server re-runs it in/);
      }
    },
  );
});

describe('liveness: an abandoned call whose re-run would be due past its TTL (Liveness table: only "the last lock-length" is said to expire)', () => {
  it('is not promised a re-run in 15 min when its record expires in 5: the hint is the completer’s last look before the TTL', async () => {
    const { tool, execute } = noteTool('send_note');
    const { completer } = completerWith([tool]);
    const call = await abandonedCall();
    // Attempt 8 (≤ maxAttempts): due 15 min after its lock's end; its TTL 5 min away — well outside its last
    // lock-length (a 60 s takeover would pass rule 2 today).
    const ttlS = Math.floor(Date.now() / 1000) + 300;
    await setAttributes(call.recordKey, { attempt: 8, expiration: ttlS });

    const poll = await runtime.lookup('send_note', call.caller, call.key);
    clockAhead(1_000 + dueAfterParkMs(8));
    const atDue = await completer.onRecheck({ key: call.recordKey, claim: call.claim }, deadline());

    // At its due time it is gone (expired): 'settled', never re-run, never stalled.
    expect(atDue).toBe('settled');
    expect(execute).not.toHaveBeenCalled();
    // Today: retryAfterMs ≈ 900 000 ("the server re-runs it in 15 min"), though the record expires in ~300 s
    // and no re-run will come. The hint should not pass the TTL (or the completer should re-run it before).
    jest.restoreAllMocks();
    expect((poll as { retryAfterMs: number }).retryAfterMs).toBeLessThanOrEqual(ttlS * 1000 - Date.now() + 1_000);
  });
});

/** A call of a send_note that always fails (tool TTL `ttlSeconds`), driven by the completer at each due time its record gives. */
async function driveAlwaysFailing(ttlSeconds?: number) {
  const failing = noteTool(
    'send_note',
    async () => {
      throw Object.assign(new Error('provider timed out'), { name: 'TimeoutError' });
    },
    ttlSeconds === undefined ? {} : { ttlSeconds },
  ).tool;
  const { completer } = completerWith([failing]);
  const caller = identity();
  const key = `k-${randomUUID()}`;
  await runtime.invoke(failing, caller, { idempotency_key: key, text: 'hi' }, deadline());
  const [record] = await world.idempotencyRecordKeys(caller.tenant);
  const recordKey = record!.id;
  // The completer, as the stack runs it: each recheck at the due time the record gives (completerDueAtMs).
  const outcomes: string[] = [];
  let clock = Date.now();
  jest.spyOn(Date, 'now').mockImplementation(() => clock);
  for (let i = 0; i < 12; i += 1) {
    const item = await itemOf(recordKey);
    if (item.claim_id === undefined) break;
    // When the completer looks (completerLooksAtMs): due, or its last look before the TTL.
    clock = completerLooksAtMs(callRecordOf(item, DEFAULT_RECORD_ATTRIBUTES)!) + 1;
    const outcome = await completer.onRecheck({ key: recordKey, claim: item.claim_id as string }, deadline());
    outcomes.push(outcome);
    if (outcome === 'settled' || outcome === 'gave_up') break;
  }
  const poll = await runtime.lookup('send_note', caller, key);
  return { outcomes, poll: poll?.status };
}

describe('liveness: a tool with a short TTL (≥ MIN_TTL_SECONDS, 910 s) whose calls always fail (rule 8: bound to an end — completed, failed or stalled)', () => {
  it('control: with the default 24 h TTL, 8 re-runs then given up (stalled) — sound', async () => {
    expect(await driveAlwaysFailing()).toEqual({
      outcomes: [...Array<string>(8).fill('unsettled'), 'gave_up'],
      poll: 'stalled',
    });
  });

  it('its call is stalled before its TTL (`expiring`), not left to expire half done while the completer still backs off', async () => {
    // Today: re-run 5 times (unsettled), then at the 6th due time (~930 s after the first failure) the record
    // is past its 910 s TTL: 'settled' — gone, never stalled, its effect possibly half done, and until then each
    // poll promised a re-run. The rule's bound ("after maxAttempts: stalled ≈ 61 min") needs a TTL past it.
    // Re-run while a re-run can still end 10 s before the TTL (rule 2), then given up at the last look.
    const { outcomes, poll } = await driveAlwaysFailing(910);
    expect(outcomes.at(-1)).toBe('gave_up');
    expect(outcomes.slice(0, -1).every((outcome) => outcome === 'unsettled')).toBe(true);
    expect(outcomes.length).toBeGreaterThan(3);
    expect(poll).toBe('stalled');
  });
});
