// Rule 8 (docs/state-machine.md): every call ends, in a time its answers state.
/**
 * Review 31 of 2d4e9c8 (`seenAtMs`'s cap at the last look, `parkLimitMs`'s last-look branch, `askAgainAfterMs`'s
 * completer's look for a park whose lock ends within a second). Each `describe` holds one finding; its test
 * fails on 2d4e9c8 for the reason its title states.
 */
import { nextAfterRead } from '../../lib/api/next-step';
import {
  completerLooksAtMs,
  LATEST_LOOK_AFTER_DUE_MS,
  lastLookMs,
  WAIT_LOOK_BEFORE_LAST_LOOK_MS,
} from '../../lib/idempotency/backoff';
import type { Recheck } from '../../lib/idempotency/completer';
import { InFlightError } from '../../lib/idempotency/errors';
import type { ToolRuntime } from '../../lib/idempotency/runtime';
import { callAsTask, readTask } from '../../lib/idempotency/task';
import { callRecords } from '../helpers/call-records';
import { livenessWorld } from '../helpers/liveness-world';
import { keyedMissingCustomerTool, recordIdsOf, throttleNextRecordUpdate } from '../helpers/no-effect';
import { deadline, identity, type ProtocolWorld } from '../helpers/protocol-world';
import { noteTool } from '../helpers/tools';

const live = livenessWorld('liveness-review31');
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

describe('review31 F1: a park whose lock ends past its last look + 10 s (a provider’s wait cut to TTL − 10 s by `settle`) is looked at by `completerLooksAtMs` at its lock’s end (`seenAtMs`: max(lockEnd, lastLook)) — review 30 F1 moved that look from the TTL to TTL − 10 s, but `retrysafe complete` from cron may look up to LATEST_LOOK_AFTER_DUE_MS (a minute) after a look is due: past the TTL, where the record has expired and is never given up', () => {
  it('a provider says “ask in 10 h” on a 1 h TTL: its poll says `gives_up: expiring`; cron’s next run, 15 s after the look is due (within its minute), finds it expired — never stalled', async () => {
    const { tool } = noteTool(
      `parked_${Math.random().toString(36).slice(2, 10)}`,
      async () => {
        throw new InFlightError('the provider still runs this key', 10 * 3_600_000);
      },
      { ttlSeconds: 3_600 },
    );
    const caller = identity();
    const t0 = Date.now();
    clockAt(t0);
    expect(await runtime.invoke(tool, caller, { idempotency_key: 'p', text: 'x' }, deadline())).toMatchObject({
      status: 'pending',
    });
    const [key] = await recordIdsOf(world, caller.tenant);
    const item = await itemOf(key);
    const ttlMs = Number(item.expiration) * 1000;
    // Parked so that it is looked at by its last look (`latestParkEndMs`), no longer to TTL − 10 s.
    const lockEndsMs = lastLookMs(Number(item.expiration)) - 10_000;
    expect(item).toMatchObject({ parked_claim: item.claim_id, in_progress_expiration: lockEndsMs });
    const lookMs = completerLooksAtMs(scheduleOf(item));

    // Past its lock's end: abandoned; its poll says the next look gives it up.
    clockAt(lockEndsMs + 1);
    const { read } = await poll(caller, tool.name, 'p');
    expect(read).toMatchObject({ status: 'abandoned', gives_up: 'expiring' });

    // `retrysafe complete` from cron: each run reads the stream from its start and delivers what is due; the
    // run after the look is due comes within a minute of it (LATEST_LOOK_AFTER_DUE_MS): here 15 s after it.
    const cronRunMs = lookMs + 15_000;
    expect(cronRunMs - lookMs).toBeLessThan(LATEST_LOOK_AFTER_DUE_MS);
    clockAt(cronRunMs);
    const sent: Recheck[] = [];
    const cron = completerFor([tool], sent);
    const scheduled = (await streamImage(cron, item)).rechecksScheduled;
    const outcome = await cron.onRecheck({ key: String(key), claim: String(item.claim_id) }, deadline(60_000));
    const after = await itemOf(key);
    // Expected: a look due early enough that the slowest shipped completer still comes before the TTL (as the
    // last look, TTL − 70 s, is), and gives it up there — as its poll said.
    expect({
      lookPlusCronLagBeforeTtl: lookMs + LATEST_LOOK_AFTER_DUE_MS < ttlMs,
      scheduled,
      outcome,
      stalled: after.stalled_reason,
    }).toEqual({ lookPlusCronLagBeforeTtl: true, scheduled: 1, outcome: 'gave_up', stalled: 'expiring' });
  });
});

describe('review31 F2: a call parked behind a dedupe window’s live holder whose lock ends within a second: the pending answer says that wait (`runClaimed`: `retryAfterMs` of the holder’s lock, < 1 s), while `askAgainAfterMs`’s new branch (review 30 F3) reads the very record the park left as the completer’s look, ≈ 10 s later — `get_operation`, the task at creation and `tasks/get` disagree with the pending answer at the same instant', () => {
  it('H dies before its store (live, lock ending at T); Q with the same arguments asked at T − 400 ms: pending 400 ms, its poll and its task say ≈ 10.4 s', async () => {
    const t = keyedMissingCustomerTool();
    t.createCustomer();
    const args = (key: string) => ({ idempotency_key: key, text: 'same' });
    const t0 = Date.now();
    clockAt(t0);
    // H commits its effect and dies before its store: left in flight, live until its lock's end.
    throttleNextRecordUpdate(world);
    expect(await runtime.invoke(t.tool, t.caller, args('h31'), deadline())).toMatchObject({ ok: false });
    const [hKey] = await recordIdsOf(world, t.caller.tenant);
    const h = await itemOf(hKey);
    const hEndsMs = Number(h.in_progress_expiration);
    expect(h.parked_claim).toBeUndefined();
    expect(hEndsMs).toBeGreaterThan(t0 + 1_000);

    // Q, the same arguments inside H's window, 400 ms before H's lock ends: queued behind H, parked.
    const askedMs = hEndsMs - 400;
    clockAt(askedMs);
    const { result, task } = await callAsTask(runtime, t.tool, t.caller, args('q31'), deadline());
    const qKey = (await recordIdsOf(world, t.caller.tenant)).find((id) => id !== hKey)!;
    const q = await itemOf(qKey);
    expect(q.parked_claim).toBe(q.claim_id);
    const { read } = await poll(t.caller, t.tool.name, 'q31');
    const polled = await readTask(runtime, t.tool, t.caller, 'q31');
    // Expected (docs/state-machine.md, Liveness, "live, parked": the pending answer's retry_after_ms, a task's
    // pollIntervalMs at creation and on every tasks/get, get_operation's next.after_ms — one wait).
    expect({
      pending: (result as { retry_after_ms?: number }).retry_after_ms,
      getOperation: read.retry_after_ms,
      taskAtCreation: task?.status === 'working' ? task.pollIntervalMs : undefined,
      tasksGet: polled?.status === 'working' ? polled.pollIntervalMs : undefined,
    }).toEqual({
      pending: read.retry_after_ms,
      getOperation: read.retry_after_ms,
      taskAtCreation: read.retry_after_ms,
      tasksGet: read.retry_after_ms,
    });
    // The record's own look (what the completer does): for reference in the failure message.
    expect(completerLooksAtMs(scheduleOf(q)) - askedMs).toBeGreaterThan(0);
  });
});

describe('review31 F2 (the common case): the same on a clock that moves — a waiter queued behind a live holder far from its lock’s end is parked a second (`retryAfterMs`: at most 1 s) and told 1 s; the task `callAsTask` makes from the record a few ms later, and a poll then, find the lock ending within a second and say the completer’s look, ≈ 11 s', () => {
  it('H dies before its store (live, its lock ~10 s away); Q with the same arguments, real clock: pending 1000 ms, its task at creation ≈ 11 s', async () => {
    const t = keyedMissingCustomerTool();
    t.createCustomer();
    const args = (key: string) => ({ idempotency_key: key, text: 'same' });
    throttleNextRecordUpdate(world);
    expect(await runtime.invoke(t.tool, t.caller, args('h31b'), deadline())).toMatchObject({ ok: false });
    const { result, task } = await callAsTask(runtime, t.tool, t.caller, args('q31b'), deadline());
    const { read } = await poll(t.caller, t.tool.name, 'q31b');
    // Expected (docs/state-machine.md, Liveness, "live, parked"): one wait for the pending answer, the task at
    // creation and a poll of the same record.
    const pending = (result as { retry_after_ms?: number }).retry_after_ms;
    const taskAtCreation = task?.status === 'working' ? task.pollIntervalMs : undefined;
    const values = `pending ${pending} ms, task at creation ${taskAtCreation} ms, poll ${read.retry_after_ms} ms`;
    expect({
      pending,
      taskAtCreationAtMostThat: (taskAtCreation ?? Number.POSITIVE_INFINITY) <= (pending ?? 0),
      pollAtMostThat: (read.retry_after_ms ?? Number.POSITIVE_INFINITY) <= (pending ?? 0),
      values,
    }).toEqual({ pending: 1000, taskAtCreationAtMostThat: true, pollAtMostThat: true, values });
  });
});

describe('review31 F3: a waiter re-run at its wait look by `retrysafe complete` from cron, as late as LATEST_LOOK_AFTER_DUE_MS allows (WAIT_LOOK_BEFORE_LAST_LOOK_MS, so that cron still comes before the last look), parks again behind the same stalled call: `parkLimitMs`’s last-look branch (lastLook − the 10 s window, review 30 F2) is already past, so it falls through to the last lock end (TTL − 10 s), looked at then — cron’s next run comes past the TTL and the call expires, never given up', () => {
  it('F queued behind stalled A, parked to its wait look; cron re-runs it 55 s after that look, A still stalled: F is parked to TTL − 10 s; cron’s next runs find it live, then expired', async () => {
    const t = keyedMissingCustomerTool();
    t.createCustomer();
    const args = (key: string) => ({ idempotency_key: key, text: 'same' });
    const records = callRecords(world, runtime);
    const t0 = Date.now();
    clockAt(t0);
    // A commits its effect and dies before its store; the completer gave it up (stalled); its TTL far past F's.
    throttleNextRecordUpdate(world);
    expect(await runtime.invoke(t.tool, t.caller, args('a31'), deadline())).toMatchObject({ ok: false });
    const [aKey] = await recordIdsOf(world, t.caller.tenant);
    const a = await itemOf(aKey);
    await records.setAttributes(aKey!, {
      expiration: Math.floor(t0 / 1000) + 3 * 86_400,
      in_progress_expiration: t0 + 1,
      stalled_claim: String(a.claim_id),
    });

    // Past A's window: F, the same arguments, is held back by stalled A (movable, a new window held back by a
    // call of the old one in flight): parked until its wait look.
    clockAt(t0 + 11 * 60_000);
    expect(await runtime.invoke(t.tool, t.caller, args('f31'), deadline())).toMatchObject({ status: 'pending' });
    const fKey = (await recordIdsOf(world, t.caller.tenant)).find((id) => id !== aKey)!;
    const f1 = await itemOf(fKey);
    const ttlMs = Number(f1.expiration) * 1000;
    const lastLook = lastLookMs(Number(f1.expiration));
    const waitLookMs = completerLooksAtMs(scheduleOf(f1));
    expect(lastLook - waitLookMs).toBe(WAIT_LOOK_BEFORE_LAST_LOOK_MS);

    // Cron's run 55 s after the wait look (within its minute): before the last look, so it re-runs F.
    const cron = completerFor([t.tool]);
    clockAt(waitLookMs + 55_000);
    expect(await cron.onRecheck({ key: fKey, claim: String(f1.claim_id) }, deadline(60_000))).toBe('unsettled');
    const f2 = await itemOf(fKey);
    expect(f2.parked_claim).toBe(f2.claim_id);
    const lookMs = completerLooksAtMs(scheduleOf(f2));

    // Cron's next runs, a minute apart, each reading the stream from its start and delivering what is due.
    const outcomes: string[] = [];
    for (
      let runMs = waitLookMs + 55_000 + 60_000;
      !outcomes.at(-1)?.startsWith('gave_up') && runMs < ttlMs + 120_000;
      runMs += 60_000
    ) {
      clockAt(runMs);
      const sent: Recheck[] = [];
      const run = completerFor([t.tool], sent);
      await streamImage(run, await itemOf(fKey));
      const due = sent.filter((r) => r.delaySeconds === 0);
      const outcome = due.length
        ? await run.onRecheck({ key: fKey, claim: String(f2.claim_id) }, deadline(60_000))
        : 'nothing due';
      outcomes.push(
        `${outcome} at TTL ${runMs - ttlMs >= 0 ? '+' : '−'} ${Math.abs(Math.round((runMs - ttlMs) / 1000))} s`,
      );
    }
    const after = await itemOf(fKey);
    // Expected (docs: the wait look "parks it again, queued, due past its last look, which gives it up"):
    // looked at by its last look, so that cron, a minute late, still gives it up before its TTL.
    expect({
      lookedAtByLastLook: lookMs <= lastLook,
      stalled: after.stalled_reason,
      givenUpBeforeTtl: outcomes.at(-1),
      outcomes,
    }).toEqual({
      lookedAtByLastLook: true,
      stalled: 'expiring',
      givenUpBeforeTtl: expect.stringMatching(/^gave_up at TTL − /),
      outcomes,
    });
  });
});
