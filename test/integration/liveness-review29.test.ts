// Rule 8 (docs/state-machine.md): every call ends, in a time its answers state.
/**
 * Review 29 of 36c5533 (the `movable` wait look, `nextLookAtMs`'s stream window only for calls none of whose
 * attempts ran, `onRecheck`'s 'later' before `completerLooksAtMs`). Each `describe` holds one finding; its
 * test fails on 36c5533 for the reason its title states.
 */
import { marshall } from '@aws-sdk/util-dynamodb';
import { nextAfterRead } from '../../lib/api/next-step';
import {
  completerLooksAtMs,
  dueAfterParkMs,
  lastLookMs,
  WAIT_LOOK_BEFORE_LAST_LOOK_MS,
} from '../../lib/idempotency/backoff';
import type { Completer, Recheck } from '../../lib/idempotency/completer';
import { expiresAtSOf } from '../../lib/idempotency/derivation';
import { InFlightError } from '../../lib/idempotency/errors';
import { callRecordOf, DEFAULT_RECORD_ATTRIBUTES } from '../../lib/idempotency/protocol/record';
import type { ToolRuntime } from '../../lib/idempotency/runtime';
import { callAsTask, readTask } from '../../lib/idempotency/task';
import { readOperation } from '../../lib/reads/operation';
import { callRecords } from '../helpers/call-records';
import { movableClock } from '../helpers/clock';
import { livenessWorld } from '../helpers/liveness-world';
import {
  completerRecordingOn,
  keyedMissingCustomerTool,
  recordIdsOf as recordIdsInWorld,
  throttleNextRecordUpdate,
} from '../helpers/no-effect';
import { deadline, identity, type ProtocolWorld } from '../helpers/protocol-world';
import { noteTool } from '../helpers/tools';

const live = livenessWorld('liveness-review29');
const { clockAt, completerFor, itemOf } = live;
let world: ProtocolWorld;
let runtime: ToolRuntime;
beforeAll(() => {
  ({ world, runtime } = live);
});

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

async function poll(c: { caller: ReturnType<typeof identity>; key: string }, tool: string) {
  const read = (await readOperation({ runtime, toolNames: [tool] }, c.caller, tool, c.key)) as {
    status: string;
    retry_after_ms?: number;
    gives_up?: string;
    queued?: boolean;
  };
  const next = nextAfterRead(read as never);
  const runs = read.gives_up === undefined && /re-runs it|starts it/.test(next.message ?? '');
  return { read, says: runs ? 'runs it' : 'gives up' };
}

/** H (parked by its provider for `holderWaitMs`), then Q asked a second later with the same arguments: queued behind H. */
async function queuedBehindParkedHolder(holderWait: (qLastLook: number, t0: number) => number) {
  let runs = 0;
  let holderWaitMs = 0;
  const { tool } = noteTool(
    `window_${Math.random().toString(36).slice(2, 10)}`,
    async (a) => {
      runs += 1;
      if (runs === 1) throw new InFlightError('the provider still runs this key', holderWaitMs);
      return { receipt: { note_id: `note_${runs}`, text: a.text }, replayed: false };
    },
    { dedupeWindowSeconds: 600, ttlSeconds: 3_600 },
  );
  const caller = identity();
  const t0 = Date.now();
  const qExpiresAtS = expiresAtSOf(3_600, t0 + 1_000);
  const qLastLook = lastLookMs(qExpiresAtS);
  holderWaitMs = holderWait(qLastLook, t0);
  clockAt(t0);
  expect(await runtime.invoke(tool, caller, { idempotency_key: 'h', text: 'same' }, deadline())).toMatchObject({
    status: 'pending',
  });
  clockAt(t0 + 1_000);
  const qAnswer = await runtime.invoke(tool, caller, { idempotency_key: 'q', text: 'same' }, deadline());
  expect(qAnswer).toMatchObject({ status: 'pending' });
  const keys = (await world.idempotencyRecordKeys(caller.tenant)).map((k) => k.id);
  const items = await Promise.all(keys.map((key) => itemOf(key)));
  const q = items.find((item) => item.waited_on !== undefined)!;
  const h = items.find((item) => item !== q && item.attempt !== undefined)!;
  expect(Number(q.expiration)).toBe(qExpiresAtS);
  return { tool, caller, q, h, qLastLook, t0, qAnswer };
}

describe('review29 F1: a queued call parked until a later time (behind a window’s holder) is told its next look is the stream window (10 s) after its lock’s end — the stack saw that park when it was written and looks at the lock’s end: at its last look it gives the call up ~9 s before every answer said', () => {
  it('Q parked behind a provider-parked H so that it is due at its last look: its poll states that look and “gives up”; the stack’s recheck, scheduled from Q’s park image, gives it up there and no sooner', async () => {
    const w = await queuedBehindParkedHolder((qLastLook, t0) => qLastLook + 600_000 - t0);
    // Q is parked (live, unrun, queued) so that it is due at its last look: nothing runs it before (review 28,
    // F2); its lock ends the stream's window before (fixed: it ended at the last look, looked at 10 s past it).
    // (Since review 31, F1, H's provider wait is cut to its own last look's window, a second before Q's.)
    const lockEndsMs = Number(w.q.in_progress_expiration);
    expect(lockEndsMs).toBe(Math.min(Number(w.h.in_progress_expiration), w.qLastLook - dueAfterParkMs(1)));
    const qLookMs = completerLooksAtMs(callRecordOf(w.q, DEFAULT_RECORD_ATTRIBUTES)!);
    expect(qLookMs).toBeLessThanOrEqual(w.qLastLook);
    expect(w.q).toMatchObject({ parked_claim: w.q.claim_id, attempt: 1 });
    // The stack: Q's park image reaches the completer within its batching window — ~1 h before the lock ends.
    clockAt(w.t0 + 11_000);
    const sent: Recheck[] = [];
    const completer = completerFor([w.tool], sent);
    await streamImage(completer, String(w.q.id), w.q);
    expect(sent).toMatchObject([{ dueAtMs: qLookMs }]);
    // Just past Q's lock's end: abandoned, queued — what every answer says of the next look.
    clockAt(lockEndsMs + 1);
    const { read, says } = await poll({ caller: w.caller, key: 'q' }, w.tool.name);
    expect({ status: read.status, says }).toEqual({ status: 'abandoned', says: 'gives up' });
    const statedMs = Date.now() + (read.retry_after_ms ?? 0);
    expect(statedMs).toBe(qLookMs);
    // A recheck before the stated look (at the lock's end, a second after it): looked at again then.
    for (const atMs of [lockEndsMs, lockEndsMs + 1_000]) {
      clockAt(atMs);
      expect(await completer.onRecheck({ key: String(w.q.id), claim: String(w.q.claim_id) }, deadline(60_000))).toBe(
        'later',
      );
    }
    clockAt(statedMs);
    const outcome = await completer.onRecheck({ key: String(w.q.id), claim: String(w.q.claim_id) }, deadline(60_000));
    // No completer gives a call up before its answers said (review 28, F4): 'later' until `statedMs`, or the
    // answers state the look the stack makes (the lock's end). Now: given up 9 s before the stated look.
    expect({ outcome, givenUpEarlyByMs: outcome === 'gave_up' ? statedMs - Date.now() : 0 }).toEqual({
      outcome: 'gave_up',
      givenUpEarlyByMs: 0,
    });
  });
});

describe('review29 F1 (the same rule, a re-run): the stack starts a queued call at its lock’s end, while every answer says it starts it ~10 s later', () => {
  it('Q parked behind a provider-parked H until H’s lock’s end (2 min): just past it Q’s poll hints ~10 s, and the stack’s recheck re-runs and finishes Q then, not sooner', async () => {
    const w = await queuedBehindParkedHolder(() => 120_000);
    const endsMs = w.t0 + 120_000;
    expect(Number(w.q.in_progress_expiration)).toBe(endsMs);
    clockAt(w.t0 + 11_000);
    const sent: Recheck[] = [];
    const completer = completerFor([w.tool], sent);
    await streamImage(completer, String(w.q.id), w.q);
    // Every completer looks at it the stream's window after its lock's end — the stack included, though it
    // saw the park long before (fixed: the stack looked at the lock's end, the answers 10 s later).
    const lookMs = endsMs + dueAfterParkMs(1);
    expect(sent).toMatchObject([{ dueAtMs: lookMs }]);
    clockAt(endsMs + 1);
    const { read, says } = await poll({ caller: w.caller, key: 'q' }, w.tool.name);
    expect({ status: read.status, says }).toEqual({ status: 'abandoned', says: 'runs it' });
    for (const atMs of [endsMs, endsMs + 1_000]) {
      clockAt(atMs);
      expect(await completer.onRecheck({ key: String(w.q.id), claim: String(w.q.claim_id) }, deadline(60_000))).toBe(
        'later',
      );
    }
    clockAt(lookMs);
    const outcome = await completer.onRecheck({ key: String(w.q.id), claim: String(w.q.claim_id) }, deadline(60_000));
    expect(outcome).toBe('finished');
    // The liveness table: an abandoned call's answers hint exactly when the completer looks (at least 1 s).
    expect(endsMs + 1 + (read.retry_after_ms ?? 0)).toBe(lookMs);
  });
});

describe('review29 F2: the wait look does not re-run a waiter parked there at attempt 2 or later — its backoff puts its due 30 s+ past the wait look, within a minute of its last look, so `expiresBeforeRerun` gives it up though the call it waited on settled (review 26, F2, again)', () => {
  it('F held back by A (abandoned, then given up): the completer re-runs F once (attempt 2, due at its wait look); A’s resend settles A; F’s wait look runs F (it gave it up, `expiring`)', async () => {
    const clock = movableClock();
    const t = keyedMissingCustomerTool();
    t.createCustomer();
    const args = (key: string) => ({ idempotency_key: key, text: 'same' });
    // A commits its effect and dies before its store: abandoned, attempt 1 (due at once).
    throttleNextRecordUpdate(world);
    expect(await runtime.invoke(t.tool, t.caller, args('a9'), deadline())).toMatchObject({ ok: false });
    const [aKey] = await recordIdsInWorld(world, t.caller.tenant);
    const records = callRecords(world, runtime);
    // A's TTL far past any new call's (as in intent-runners' wait-look test).
    await records.setAttributes(aKey!, { expiration: Math.floor(Date.now() / 1000) + 3 * 86_400 });

    // Past the window: F is held back by abandoned A — parked until A's next look (a second).
    clock.advance(11 * 60_000);
    expect(await runtime.invoke(t.tool, t.caller, args('f9'), deadline())).toMatchObject({ status: 'pending' });
    const fKey = (await recordIdsInWorld(world, t.caller.tenant)).find((id) => id !== aKey) ?? '';
    const f1 = await itemOf(fKey);
    expect(Number(f1.in_progress_expiration) - Date.now()).toBeLessThanOrEqual(1_000);

    // The completer gives A up (stalled) as it would after its attempts; then F's lock ends and the completer
    // re-runs F: attempt 2, held back by stalled A (movable) — parked to its wait look.
    await records.setAttributes(aKey!, { stalled_claim: String((await itemOf(aKey!)).claim_id) });
    clock.advance(completerLooksAtMs(callRecordOf(f1, DEFAULT_RECORD_ATTRIBUTES)!) + 1_000 - Date.now());
    const { completer } = completerRecordingOn(world, runtime, [t.tool]);
    expect(await completer.onRecheck({ key: fKey, claim: String(f1.claim_id) }, deadline(60_000))).toBe('unsettled');
    const f2 = await itemOf(fKey);
    const lastLook = lastLookMs(Number(f2.expiration));
    const waitLook = lastLook - WAIT_LOOK_BEFORE_LAST_LOOK_MS;
    expect(Number(f2.attempt)).toBe(2);
    // Due at its wait look: parked until its backoff before it (fixed: parked until it, due 30 s past it).
    const f2LookMs = completerLooksAtMs(callRecordOf(f2, DEFAULT_RECORD_ATTRIBUTES)!);
    expect(Math.abs(f2LookMs - waitLook)).toBeLessThan(1_000);
    expect(f2LookMs - Number(f2.in_progress_expiration)).toBe(dueAfterParkMs(2));

    // A's resend settles it long before F's wait look.
    expect(await runtime.invoke(t.tool, t.caller, args('a9'), deadline())).toMatchObject({ ok: true });

    // F's wait look, and every look the completer asks for after it (its rechecks), until F settles or its
    // last look passed: the look the wait look exists for runs F (docs: "a re-run then finds that call
    // settled — its outcome answers, or it runs").
    const sent: Recheck[] = [];
    const stack = completerFor([t.tool], sent);
    let atMs = f2LookMs + 1_000;
    let outcome = 'later';
    const looks: string[] = [];
    for (let i = 0; i < 5 && outcome === 'later' && atMs <= lastLook + 5_000; i += 1) {
      clock.advance(atMs - Date.now());
      outcome = await stack.onRecheck({ key: fKey, claim: String(f2.claim_id) }, deadline(60_000));
      looks.push(`${outcome} at wait look + ${Math.round((Date.now() - waitLook) / 1000)} s`);
      atMs = sent.at(-1)?.dueAtMs ?? atMs;
    }
    const after = await itemOf(fKey);
    expect({ outcome, f: after.status, stalled: after.stalled_reason, looks }).toEqual({
      looks: [expect.stringMatching(/^finished at wait look/)],
      outcome: 'finished',
      f: 'COMPLETED',
      stalled: undefined,
    });
  });
});

describe('review29 F3: the task a parked call begins as (`callAsTask`: the 2025-11-25 task-augmented call’s task, the library’s API) polls every second — its record as the attempt leaves it (`leftAs`) has no `parkedClaimId`, so `askAgainAfterMs` reads it as a live holder’s; the pending answer of the same call says the whole wait', () => {
  it('a provider parks its call for 5 min: the answer says retry_after_ms 300000, its task pollIntervalMs 1000 (and tasks/get, from the stored record, 300000)', async () => {
    const waitMs = 300_000;
    const { tool } = noteTool(`parked_${Math.random().toString(36).slice(2, 10)}`, async () => {
      throw new InFlightError('the provider still runs this key', waitMs);
    });
    const caller = identity();
    clockAt(Date.now());
    const { result, task } = await callAsTask(runtime, tool, caller, { idempotency_key: 'p', text: 'x' }, deadline());
    const read = await readTask(runtime, tool, caller, 'p');
    expect(result).toMatchObject({ status: 'pending', retry_after_ms: waitMs });
    // Nobody runs it before its lock's end: every surface says that wait (docs/state-machine.md, Liveness, "live,
    // parked": "a task's pollIntervalMs at creation and on every tasks/get").
    expect({
      created: task?.status === 'working' ? task.pollIntervalMs : undefined,
      tasksGet: read?.status === 'working' ? read.pollIntervalMs : undefined,
    }).toEqual({ created: waitMs, tasksGet: waitMs });
  });
});
