// Rule 8 (docs/state-machine.md): every call ends, in a time its answers state.
/**
 * Review 32 of 593dd32 (`latestParkEndMs`: no park before the last look ends its lock past the window before
 * that look). Each `describe` holds one finding; its test fails on 593dd32 for the reason its title states.
 */
import { nextAfterRead } from '../../lib/api/next-step';
import { completerLooksAtMs, LATEST_LOOK_AFTER_DUE_MS, lastLookMs } from '../../lib/idempotency/backoff';
import type { Recheck } from '../../lib/idempotency/completer';
import { InFlightError } from '../../lib/idempotency/errors';
import type { ToolRuntime } from '../../lib/idempotency/runtime';
import { callRecords } from '../helpers/call-records';
import { livenessWorld } from '../helpers/liveness-world';
import { recordIdsOf, throttleNextRecordUpdate } from '../helpers/no-effect';
import { deadline, identity, type ProtocolWorld } from '../helpers/protocol-world';
import { noteTool } from '../helpers/tools';

const live = livenessWorld('liveness-review32');
const { clockAt, itemOf, scheduleOf, completerFor, streamImage } = live;
let world: ProtocolWorld;
let runtime: ToolRuntime;
beforeAll(() => {
  ({ world, runtime } = live);
});

async function poll(caller: ReturnType<typeof identity>, tool: string, key: string) {
  const read = await live.poll(caller, tool, key);
  return { read, next: read.status ? nextAfterRead(read as never) : undefined };
}

describe('review32 F1: a caller’s resend that took an abandoned call over within a minute of its last look wrote a claim’s lock past that look (rule 2’s claim limit only kept it by TTL − 10 s: `takeOver`/`claimCall`’s `ttlNeededFor`); its holder died, and the completer looked at that lock’s end — cron, a minute late, came past the TTL and the call expired, never given up, though every poll said the next look gives it up', () => {
  // Fixed at rule 2: a lock taken ends by the call's last look, or its takeover gives the call up in advance
  // (`stalled`, `expiring` on its own claim, in the same write): if its attempt dies, the record itself says the
  // call is stalled once the lock ends — no completer's look is needed, however late.
  it('resend at the last look − 5 s with a 60 s invocation: taken over, given up in advance; its worker dies; the record says stalled (expiring) at its lock’s end, before its TTL, with no completer', async () => {
    const { tool } = noteTool(
      `resent_${Math.random().toString(36).slice(2, 10)}`,
      async (args) => {
        // The worker dies after the effect, before its store (the store's write fails; nothing settles it).
        throttleNextRecordUpdate(world);
        return { receipt: { note_id: `note_${Math.random()}`, text: args.text }, replayed: false };
      },
      { ttlSeconds: 3_600 },
    );
    const caller = identity();
    clockAt(Date.now());
    await runtime.invoke(tool, caller, { idempotency_key: 'r', text: 'x' }, deadline());
    const [key] = await recordIdsOf(world, caller.tenant);
    const first = await itemOf(key);
    const ttlMs = Number(first.expiration) * 1000;
    const lastLook = lastLookMs(Number(first.expiration));

    clockAt(lastLook - 5_000);
    await runtime.invoke(tool, caller, { idempotency_key: 'r', text: 'x' }, deadline(60_000));
    const item = await itemOf(key);
    const lockEndsMs = Number(item.in_progress_expiration);
    expect(item).toMatchObject({ attempt: 2, stalled_claim: item.claim_id, stalled_reason: 'expiring' });
    expect([lockEndsMs > lastLook, lockEndsMs <= ttlMs - 10_000]).toEqual([true, true]);

    // Past its lock's end, no completer having looked: stalled, as every answer says, before the TTL.
    clockAt(lockEndsMs + 1);
    const { read } = await poll(caller, tool.name, 'r');
    expect(read).toMatchObject({ status: 'stalled' });
    expect(Date.now()).toBeLessThan(ttlMs);
  });

  it('resend at the last look − 5 s with a 4 s invocation: taken over, its lock ending by the last look; its worker dies; cron a minute late still gives the call up before its TTL', async () => {
    const { tool } = noteTool(
      `resent_${Math.random().toString(36).slice(2, 10)}`,
      async (args) => {
        throttleNextRecordUpdate(world);
        return { receipt: { note_id: `note_${Math.random()}`, text: args.text }, replayed: false };
      },
      { ttlSeconds: 3_600 },
    );
    const caller = identity();
    clockAt(Date.now());
    await runtime.invoke(tool, caller, { idempotency_key: 'r', text: 'x' }, deadline());
    const [key] = await recordIdsOf(world, caller.tenant);
    const first = await itemOf(key);
    const ttlMs = Number(first.expiration) * 1000;
    const lastLook = lastLookMs(Number(first.expiration));

    const resendMs = lastLook - 5_000;
    clockAt(resendMs);
    await runtime.invoke(tool, caller, { idempotency_key: 'r', text: 'x' }, deadline(4_000));
    const item = await itemOf(key);
    const lockEndsMs = Number(item.in_progress_expiration);
    expect([item.claim_id !== first.claim_id, item.stalled_claim === item.claim_id, lockEndsMs <= lastLook]).toEqual([
      true,
      false,
      true,
    ]);
    const lookMs = completerLooksAtMs(scheduleOf(item));

    // Past its lock's end: abandoned; its poll says the next look gives it up, at the wait it states.
    clockAt(lockEndsMs + 1);
    const { read } = await poll(caller, tool.name, 'r');
    expect(read).toMatchObject({ status: 'abandoned', gives_up: 'expiring' });
    const statedMs = Date.now() + (read.retry_after_ms ?? 0);

    // `retrysafe complete` from cron: its run after the look is due comes within a minute of it
    // (LATEST_LOOK_AFTER_DUE_MS): here 59 s after the stated look.
    const cronRunMs = Math.max(lookMs, statedMs) + 59_000;
    clockAt(cronRunMs);
    const cron = completerFor([tool]);
    const scheduled = (await streamImage(cron, item)).rechecksScheduled;
    const outcome = await cron.onRecheck({ key: String(key), claim: String(item.claim_id) }, deadline(60_000));
    const after = await itemOf(key);
    // Every completer, cron a minute late too, gives a call up before its TTL (docs/state-machine.md, Liveness).
    const values = `lock ends ${Math.round((lastLook - lockEndsMs) / 1000)} s before the last look, look at TTL − ${Math.round((ttlMs - lookMs) / 1000)} s, cron at TTL − ${Math.round((ttlMs - cronRunMs) / 1000)} s`;
    expect({
      lookPlusCronLagBeforeTtl: lookMs + LATEST_LOOK_AFTER_DUE_MS < ttlMs,
      scheduled,
      outcome,
      stalled: after.stalled_reason,
      values,
    }).toEqual({ lookPlusCronLagBeforeTtl: true, scheduled: 1, outcome: 'gave_up', stalled: 'expiring', values });
  });
});

describe('review32 F2: a provider’s wait (InFlightError) asked within the stream’s window before the last look is parked to now (`latestParkEndMs`: max(lastLook − 10 s, now)) — answered `pending` in 100 ms (the floor) and abandoned at once: the caller’s resend 100 ms later takes it over and runs the tool again though the provider said it still runs the key for hours, and its takeover writes a claim’s lock a minute past the last look (F1)', () => {
  it('a provider says “ask in 10 h” to a resend 5 s before the last look: pending 100 ms; a resend 100 ms later re-runs the tool, its lock past the last look', async () => {
    let crash = true;
    const { tool, execute } = noteTool(
      `wait_${Math.random().toString(36).slice(2, 10)}`,
      async () => {
        if (crash) {
          crash = false;
          throttleNextRecordUpdate(world); // the first worker dies before its store
          return { receipt: { note_id: 'n' }, replayed: false };
        }
        throw new InFlightError('the provider still runs this key', 10 * 3_600_000);
      },
      { ttlSeconds: 3_600 },
    );
    const caller = identity();
    const t0 = Date.now();
    clockAt(t0);
    await runtime.invoke(tool, caller, { idempotency_key: 'w', text: 'x' }, deadline());
    const [key] = await recordIdsOf(world, caller.tenant);
    const first = await itemOf(key);
    const lastLook = lastLookMs(Number(first.expiration));

    // A resend 5 s before the last look takes the abandoned call over; the provider says: ask in 10 h.
    const askedMs = lastLook - 5_000;
    clockAt(askedMs);
    const answer = (await runtime.invoke(tool, caller, { idempotency_key: 'w', text: 'x' }, deadline(60_000))) as {
      status?: string;
      retry_after_ms?: number;
    };
    const parked = await itemOf(key);
    const runsBefore = execute.mock.calls.length;

    // The caller asks again when told.
    clockAt(askedMs + (answer.retry_after_ms ?? 0));
    await runtime.invoke(tool, caller, { idempotency_key: 'w', text: 'x' }, deadline(60_000));
    const after = await itemOf(key);
    const values = `pending ${answer.retry_after_ms} ms; parked lock at the last look − ${(lastLook - Number(parked.in_progress_expiration)) / 1000} s; after the resend: attempt ${after.attempt}, tool runs ${runsBefore} → ${execute.mock.calls.length}`;
    // Expected: the provider's wait kept (pending until the completer gives it up at the last look, as before
    // 593dd32 until the last lock end), not re-run at once; no lock written past the last look before it.
    expect({
      status: answer.status,
      pendingUntilAtLeastTheLastLook: askedMs + (answer.retry_after_ms ?? 0) >= lastLook,
      reRun: execute.mock.calls.length > runsBefore,
      values,
    }).toEqual({ status: 'pending', pendingUntilAtLeastTheLastLook: true, reRun: false, values });
  });
});

describe('review32 F3: cron’s re-run of a call due a minute and a second before its last look, 59 s late (within LATEST_LOOK_AFTER_DUE_MS), was allowed (`tooLateToRerun`: before the last look, not past `lastRerunStartMs`) and took it over with a 60 s claim lock ending 58 s past the last look; its worker died — the look at that lock’s end was TTL − 12 s, and cron’s next run found the record expired, never given up', () => {
  // Fixed by one rule for every lock (`latestLockEndMs`: no lock ends past the call's last look).
  it('cron looks at the last look − 2 s, a call due a minute and a second before it: given up there (a re-run’s lock would end past the last look), before the TTL', async () => {
    const { tool } = noteTool(
      `cron_${Math.random().toString(36).slice(2, 10)}`,
      async (args) => {
        throttleNextRecordUpdate(world); // every worker dies before its store
        return { receipt: { note_id: `note_${Math.random()}`, text: args.text }, replayed: false };
      },
      { ttlSeconds: 3_600 },
    );
    const caller = identity();
    const t0 = Date.now();
    clockAt(t0);
    await runtime.invoke(tool, caller, { idempotency_key: 'c', text: 'x' }, deadline());
    const [key] = await recordIdsOf(world, caller.tenant);
    const first = await itemOf(key);
    const ttlMs = Number(first.expiration) * 1000;
    const lastLook = lastLookMs(Number(first.expiration));
    // Its first attempt's lock (a failed attempt's park) ends so that it is due a minute and a second before the
    // last look (not `expiresBeforeRerun`).
    const dueMs = lastLook - LATEST_LOOK_AFTER_DUE_MS - 1_000;
    await callRecords(world, runtime).setAttributes(String(key), {
      in_progress_expiration: dueMs - 10_000,
      parked_claim: String(first.claim_id),
    });
    const parked = await itemOf(key);

    // Cron's run 59 s after it is due: it re-runs the call (a 60 s lock), whose worker dies before its store.
    const runMs = dueMs + 59_000;
    clockAt(runMs);
    const outcome1 = await completerFor([tool]).onRecheck(
      { key: String(key), claim: String(parked.claim_id) },
      deadline(60_000),
    );
    const taken = await itemOf(key);
    const lookMs = completerLooksAtMs(scheduleOf(taken));
    // Its poll after that lock's end: the next look gives it up.
    clockAt(Number(taken.in_progress_expiration) + 1);
    const { read } = await poll(caller, tool.name, 'c');
    // Cron's next runs, a minute apart, each reading the stream from its start and delivering what is due.
    const outcomes: string[] = [`${outcome1} at TTL − ${Math.round((ttlMs - runMs) / 1000)} s`];
    for (let atMs = runMs + 60_000; !outcomes.at(-1)?.startsWith('gave_up') && atMs < ttlMs + 120_000; atMs += 60_000) {
      clockAt(atMs);
      const sent: Recheck[] = [];
      const cron = completerFor([tool], sent);
      await streamImage(cron, await itemOf(key));
      const due = sent.filter((r) => r.delaySeconds === 0);
      const outcome = due.length
        ? await cron.onRecheck({ key: String(key), claim: String(taken.claim_id) }, deadline(60_000))
        : 'nothing due';
      outcomes.push(`${outcome} at TTL ${atMs >= ttlMs ? '+' : '−'} ${Math.abs(Math.round((atMs - ttlMs) / 1000))} s`);
    }
    const after = await itemOf(key);
    const values = `first look: ${outcome1}, attempt ${taken.attempt}, lock ends ${(lastLook - Number(taken.in_progress_expiration)) / 1000} s before the last look; poll then: ${read.status}/${read.gives_up}; look at TTL − ${(ttlMs - lookMs) / 1000} s`;
    // Expected: looked at by its last look, so that cron, a minute late, still gives it up before its TTL.
    expect({
      lookPlusCronLagBeforeTtl: lookMs + LATEST_LOOK_AFTER_DUE_MS < ttlMs,
      stalled: after.stalled_reason,
      outcomes,
      values,
    }).toEqual({
      lookPlusCronLagBeforeTtl: true,
      stalled: 'expiring',
      outcomes: [expect.stringMatching(/^gave_up at TTL − /)],
      values,
    });
  });
});
