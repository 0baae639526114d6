// Rule 8 (docs/state-machine.md): every call ends, in a time its answers state.
/**
 * Review 25 (helper-48) of de7f78a, 2fb432d, 597b9c0, 7604d91: an abandoned call's answers say in advance what
 * the completer's next look does (`givesUpAtNextLook`). Each test here failed on 7604d91's lib/. Fixed at
 * their rule: F1 and F1b (a look at or past the last look gives up whatever the completer's lock, and a
 * re-run due at it is said to — `expiresBeforeRerun` with `>=`, `tooLateToRerun`), F2 (a queued call given
 * up is told nothing happened), F3 (the `expiring` words promise a resend's run only while an attempt still
 * fits). Known and left, `test.failing`: F7 (a parked queued call is told "Still running" until its lock's
 * end gives it up: a `pending` answer carries no `gives_up`). F8 (a queued call parked to its last lock end
 * after a deploy lowered the TTL was told the server gives it up at the TTL: it expired instead) is fixed at
 * rule 2 (reviews 32 and 33): the resend past the last look that parks it there gave it up in advance, so its
 * record says it is stalled once that lock ends.
 */
import { randomUUID } from 'node:crypto';
import { nextAfterRead } from '../../lib/api/next-step';
import { dueAfterParkMs, lastLookMs } from '../../lib/idempotency/backoff';
import { InFlightError } from '../../lib/idempotency/errors';
import { inFlightCallOf } from '../../lib/idempotency/in-flight';
import type { ToolRuntime } from '../../lib/idempotency/runtime';
import { taskOf } from '../../lib/idempotency/task';
import { readOperation } from '../../lib/reads/operation';
import { callRecords } from '../helpers/call-records';
import { completerOn } from '../helpers/no-effect';
import { ownIdempotencyTable } from '../helpers/own-table';
import { createProtocolWorld, deadline, identity, type ProtocolWorld } from '../helpers/protocol-world';
import { noteTool } from '../helpers/tools';

ownIdempotencyTable('liveness-review25');
let world: ProtocolWorld;
let runtime: ToolRuntime;
beforeAll(() => {
  world = createProtocolWorld();
  runtime = world.idempotencyRuntime();
});
afterAll(() => world.destroy());
afterEach(() => jest.restoreAllMocks());

/** The stack's completer Lambda's timeout (COMPLETER_DEFAULTS.timeoutSeconds) and `retrysafe complete`'s pass (PASS_MS). */
const STACK_COMPLETER_LOCK_MS = 60_000;

const itemOf = (key: string) => callRecords(world, runtime).itemOf(key);

function clockAt(atMs: number): void {
  jest.restoreAllMocks();
  jest.spyOn(Date, 'now').mockImplementation(() => atMs);
}

/**
 * H, a dedupe-window call the provider says is still running (InFlightError: parked to its last lock end);
 * then Q, the same arguments under another key a second later: queued behind H, parked until its own last
 * look (`parkLimitMs`) — attempt 1, nothing ran.
 */
async function queuedUntilItsLastLook() {
  let runs = 0;
  const execute = jest.fn(async (a: { text: string }) => {
    runs += 1;
    if (runs === 1) throw new InFlightError('the provider still runs this key', 10 * 3_600_000);
    return { receipt: { note_id: `note_${randomUUID()}`, text: a.text }, replayed: false };
  });
  const name = `window_${randomUUID().slice(0, 8)}`;
  const { tool } = noteTool(name, execute, { dedupeWindowSeconds: 600, ttlSeconds: 3_600 });
  // H asked under a 2 h TTL before a deploy lowered it to 1 h: its provider's wait, cut by its own last look
  // (review 31), still outlasts Q's.
  const { tool: holderTool } = noteTool(name, execute, { dedupeWindowSeconds: 600, ttlSeconds: 7_200 });
  const caller = identity();
  const t0 = Date.now();
  clockAt(t0);
  const h = await runtime.invoke(holderTool, caller, { idempotency_key: 'h', text: 'same' }, deadline());
  expect(h).toMatchObject({ ok: false, status: 'pending' });
  clockAt(t0 + 1_000);
  const q = await runtime.invoke(tool, caller, { idempotency_key: 'q', text: 'same' }, deadline());
  expect(q).toMatchObject({ ok: false, status: 'pending' });
  const keys = (await world.idempotencyRecordKeys(caller.tenant)).map((k) => k.id);
  const items = await Promise.all(keys.map(itemOf));
  const qItem = items.find((item) => item.queued_attempts === 1)!;
  const expiresAtS = Number(qItem.expiration);
  // Due at exactly its last look (parked until the stream's window before it: review 29, F1), attempt 1,
  // queued (nothing ran).
  expect(qItem).toMatchObject({
    attempt: 1,
    queued_attempts: 1,
    in_progress_expiration: lastLookMs(expiresAtS) - dueAfterParkMs(1),
  });
  return { tool, execute, caller, recordKey: String(qItem.id), claim: String(qItem.claim_id), expiresAtS };
}

const completerWith = (tool: ReturnType<typeof noteTool>['tool']) => completerOn(world, runtime, [tool]);

describe('review25 F1: a call queued behind a window holder, parked until its own last look (attempt 1): its answers say “queued: the server starts it”, the stack’s completer gives it up (expiring) at that wait', () => {
  it('review25 F1: get_operation (gives_up, hint, next) at the abandoned call’s wait vs what the completer (60 s lock) does then', async () => {
    const q = await queuedUntilItsLastLook();
    // Past its lock (its last look): abandoned, as a poll then finds it.
    clockAt(lastLookMs(q.expiresAtS) + 1_000);
    const read = await readOperation({ runtime, toolNames: [q.tool.name] }, q.caller, q.tool.name, 'q');
    const next = nextAfterRead(read as never);
    const wait = (read as { retry_after_ms: number }).retry_after_ms;
    expect(read).toMatchObject({ status: 'abandoned', queued: true });

    // The completer at that wait, with the stack's lock (a recheck scheduled for completerLooksAtMs).
    clockAt(Date.now() + wait);
    const outcome = await completerWith(q.tool).onRecheck(
      { key: q.recordKey, claim: q.claim },
      deadline(STACK_COMPLETER_LOCK_MS),
    );
    const item = await itemOf(q.recordKey);

    const said = (read as { gives_up?: string }).gives_up === undefined ? 'runs it' : 'gives up';
    const did = outcome === 'gave_up' ? 'gives up' : 'runs it';
    expect({ outcome, stalled_reason: item.stalled_reason }).toEqual({
      outcome: 'gave_up',
      stalled_reason: 'expiring',
    });
    // What the answers said the look does is what it did.
    expect({ said, hint: (read as { hint: string }).hint, next: next.message }).toEqual({
      said: did,
      hint: expect.not.stringMatching(/starts it/),
      next: expect.not.stringMatching(/starts it/),
    });
  });

  it('review25 F1: its MCP task and `retrysafe calls` say the same (queued, no givesUp) for the call the completer gives up', async () => {
    const q = await queuedUntilItsLastLook();
    clockAt(lastLookMs(q.expiresAtS) + 1_000);
    const record = await runtime.readCall(q.tool.name, q.caller, 'q');
    const task = taskOf(record, {
      nowMs: Date.now(),
      clientKey: 'q',
      ttlSeconds: 3_600,
      maxAttempts: runtime.maxAttempts,
    });
    const listed = inFlightCallOf(await itemOf(q.recordKey), Date.now(), {}, runtime.maxAttempts);
    const wait = (task as { pollIntervalMs: number }).pollIntervalMs;
    clockAt(Date.now() + wait);
    const outcome = await completerWith(q.tool).onRecheck(
      { key: q.recordKey, claim: q.claim },
      deadline(STACK_COMPLETER_LOCK_MS),
    );
    expect(outcome).toBe('gave_up');
    expect({ task: (task as { givesUp?: string }).givesUp, calls: listed?.givesUp }).toEqual({
      task: 'expiring',
      calls: 'expiring',
    });
  });
});

describe('review25 F1b: the same record at the same time, the decision depends on the completer’s own lock (597b9c0: “the completer gives up by it whatever its own lock”; Liveness: the same schedule under each completer)', () => {
  it('review25 F1b: two such calls (Q parked until its last look), each looked at 1 s past it: the stack’s completer (60 s lock) gives one up, `retrysafe dev`’s pass (10 s lock, COMPLETER_PASS_MS) re-runs the other', async () => {
    const decide = async (lockMs: number) => {
      const q = await queuedUntilItsLastLook();
      clockAt(lastLookMs(q.expiresAtS) + 1_000);
      return completerWith(q.tool).onRecheck({ key: q.recordKey, claim: q.claim }, deadline(lockMs));
    };
    const stack = await decide(STACK_COMPLETER_LOCK_MS);
    const dev = await decide(10_000);
    // By the record alone: the same record, the same instant, the same decision.
    expect({ stack, dev }).toEqual({ stack, dev: stack });
  });
});

describe('review25 F2: a queued call (nothing ran) whose next look gives it up is told it “stopped before it finished”, not that nothing happened (docs/guarantees.md: while every attempt was queued the answers say it is queued and nothing happened, not that it stopped)', () => {
  it('review25 F2: Q resent 9 s before its last look, queued behind H again (attempt 2, queued 2, parked to its last look): get_operation says queued: true and gives_up: expiring, and its hint and next say it stopped before it finished', async () => {
    const q = await queuedUntilItsLastLook();
    // Its caller resends it once its lock ended, in an invocation that ends by its last look (no lock may end
    // later: rule 2): a takeover, queued behind H again, parked.
    clockAt(lastLookMs(q.expiresAtS) - 9_000);
    const resent = await runtime.invoke(q.tool, q.caller, { idempotency_key: 'q', text: 'same' }, deadline(5_000));
    expect(resent).toMatchObject({ ok: false, status: 'pending' });
    const item = await itemOf(q.recordKey);
    expect(item).toMatchObject({ attempt: 2, queued_attempts: 2 });
    expect(q.execute).toHaveBeenCalledTimes(1); // H's run only: nothing of Q ran

    clockAt(Number(item.in_progress_expiration) + 1);
    const read = await readOperation({ runtime, toolNames: [q.tool.name] }, q.caller, q.tool.name, 'q');
    const next = nextAfterRead(read as never);
    const record = await runtime.readCall(q.tool.name, q.caller, 'q');
    const task = taskOf(record, { nowMs: Date.now(), clientKey: 'q', ttlSeconds: 3_600 });
    expect(read).toMatchObject({ status: 'abandoned', queued: true, gives_up: 'expiring' });
    expect(task).toMatchObject({ note: 'queued', givesUp: 'expiring' });
    // Nothing ran: the words say so, as the queued and the never-ran stalled words do.
    expect({ hint: (read as { hint: string }).hint, next: next.message }).toEqual({
      hint: expect.stringMatching(/nothing happened/),
      next: expect.stringMatching(/nothing ran|nothing happened/),
    });
  });
});

describe('review25 F3 (fixed): the `expiring` words (GIVES_UP_HINTS.expiring, next) told the caller to resend now to run it again — in the record’s last seconds a resend cannot take it over and is `pending` until the TTL (docs/state-machine.md Liveness, the expiring row)', () => {
  it('review25 F3: a resend in the last 20 s whose attempt failed: the poll says “resend now to run it again”; the resend (the API’s 10 s deadline) is pending, nothing runs', async () => {
    let clock = Date.now();
    jest.spyOn(Date, 'now').mockImplementation(() => clock);
    let failing = true;
    const { tool, execute } = noteTool(
      'send_note',
      async (a) => {
        if (failing) {
          clock += 2_000; // a provider timeout, 2 s in
          throw Object.assign(new Error('provider timed out'), { name: 'TimeoutError' });
        }
        return { receipt: { note_id: `note_${randomUUID()}`, text: a.text }, replayed: false };
      },
      { ttlSeconds: 910 },
    );
    const caller = identity();
    const first = await runtime.invoke(tool, caller, { idempotency_key: 'k', text: 'hi' }, deadline());
    expect(first).toMatchObject({ ok: false, error: { code: 'unavailable' } });
    const [found] = await world.idempotencyRecordKeys(caller.tenant);
    const expiresAtS = Number((await itemOf(found!.id)).expiration);
    // Its caller resends it 20 s before the TTL (a 10 s lock still fits); that attempt fails too, 2 s in.
    clock = expiresAtS * 1000 - 20_000;
    const resent = await runtime.invoke(tool, caller, { idempotency_key: 'k', text: 'hi' }, deadline());
    expect(resent).toMatchObject({ ok: false, error: { code: 'unavailable' } });
    expect(execute).toHaveBeenCalledTimes(2);

    clock += 100;
    const read = await readOperation({ runtime, toolNames: ['send_note'] }, caller, 'send_note', 'k');
    const next = nextAfterRead(read as never);
    // Its resend's takeover, its lock ending past the last look, gave it up in advance (rule 2): stalled, and
    // `expiring`, since its attempt failed.
    expect(read).toMatchObject({ status: 'stalled' });
    // The caller does as told, now, through the API (INVOCATION_TIMEOUT_SECONDS, 10 s).
    failing = false;
    const now = await runtime.invoke(tool, caller, { idempotency_key: 'k', text: 'hi' }, deadline(10_000));
    const words = `${(read as { hint: string }).hint} ${next.message}`;
    // A resend this late takes no lock that ends 10 s before the TTL (rule 2): pending, nothing runs.
    expect({
      answer: (now as { status?: string; ok: boolean }).status ?? 'ran',
      runs: execute.mock.calls.length,
    }).toEqual({ answer: 'pending', runs: 2 });
    // So the words promise no run now: a resend runs it only while an attempt still fits before the TTL
    // (fixed: they said "resend … now to run it again").
    expect(words).not.toMatch(/resend [^.]*now to run it again|to run it again, now/);
    expect((read as { hint: string }).hint).toMatch(/while an attempt still fits before its record expires/);
    expect(next.message).not.toMatch(/\bnow\b/);
  });
});

describe('review25 F7: a queued call parked behind a window holder (live, parked: nothing runs it) whose lock’s end is its give-up is told “Still running”, never that the server stops then', () => {
  it.failing('review25 (known, not fixed: docs/state-machine.md Liveness, “Left open”) F7: Q resent 9 s before its last look and queued again (attempt 2, parked to its last look): until then get_operation says pending, “Still running”, no gives_up; the completer’s look at that wait gives it up (expiring)', async () => {
    const q = await queuedUntilItsLastLook();
    clockAt(lastLookMs(q.expiresAtS) - 9_000);
    await runtime.invoke(q.tool, q.caller, { idempotency_key: 'q', text: 'same' }, deadline(5_000));
    const item = await itemOf(q.recordKey);
    expect(item).toMatchObject({ attempt: 2, queued_attempts: 2 });

    clockAt(Date.now() + 1_000);
    const read = await readOperation({ runtime, toolNames: [q.tool.name] }, q.caller, q.tool.name, 'q');
    const next = nextAfterRead(read as never);
    const wait = (read as { retry_after_ms: number }).retry_after_ms;
    // At the wait it gave (its lock's end), and the 1 s a recheck of a live call waits past it.
    clockAt(Date.now() + wait + 1_000);
    const outcome = await completerWith(q.tool).onRecheck(
      { key: q.recordKey, claim: String(item.claim_id) },
      deadline(STACK_COMPLETER_LOCK_MS),
    );
    expect(outcome).toBe('gave_up');
    expect(q.execute).toHaveBeenCalledTimes(1); // H's only: nothing of Q ever ran
    // What it was told: still running (nothing runs it), nothing of the give-up at that wait.
    expect({
      status: (read as { status: string }).status,
      next: next.message,
      gives_up: (read as { gives_up?: string }).gives_up,
    }).toEqual({
      status: 'pending',
      next: expect.not.stringMatching(/Still running/),
      gives_up: 'expiring',
    });
  });
});

describe('review25 F8 (fixed by rule 2: a resend past the last look gives its call up in advance): a queued call parked to its last lock end (TTL − 10 s) was told the server stops retrying it in 10 s — at its TTL: a poll then found no call at all, not the stalled call it was told of', () => {
  it('review25 F8: H claimed under a longer TTL (a deploy lowered it since); Q resent past its last look, parked to TTL − 10 s, given up in advance: at its lock’s end it is stalled by its record, before its TTL', async () => {
    const name = `window_${randomUUID().slice(0, 8)}`;
    const behaviour = async (a: { text: string }) => {
      throw new InFlightError(`the provider still runs ${a.text}`, 10 * 3_600_000);
    };
    const long = noteTool(name, behaviour, { dedupeWindowSeconds: 600, ttlSeconds: 7_200 }).tool;
    const short = noteTool(name, behaviour, { dedupeWindowSeconds: 600, ttlSeconds: 3_600 }).tool;
    const caller = identity();
    const t0 = Date.now();
    clockAt(t0);
    expect(await runtime.invoke(long, caller, { idempotency_key: 'h', text: 'same' }, deadline())).toMatchObject({
      status: 'pending',
    });
    clockAt(t0 + 1_000);
    expect(await runtime.invoke(short, caller, { idempotency_key: 'q', text: 'same' }, deadline())).toMatchObject({
      status: 'pending',
    });
    const keys = (await world.idempotencyRecordKeys(caller.tenant)).map((k) => k.id);
    const qItem = (await Promise.all(keys.map(itemOf))).find((item) => item.queued_attempts === 1)!;
    const expiresAtS = Number(qItem.expiration);
    clockAt(lastLookMs(expiresAtS) + 1_000);
    await runtime.invoke(short, caller, { idempotency_key: 'q', text: 'same' }, deadline());
    const parked = await itemOf(String(qItem.id));
    expect(parked).toMatchObject({
      attempt: 2,
      queued_attempts: 2,
      in_progress_expiration: expiresAtS * 1000 - 10_000,
    });

    // Its resend's takeover gave it up in advance (its lock ends past the last look): once that lock ends the
    // record itself says it is stalled — no completer's look, which may come past the TTL, is needed.
    expect(parked).toMatchObject({ stalled_claim: parked.claim_id, stalled_reason: 'expiring' });
    clockAt(expiresAtS * 1000 - 10_000 + 1);
    const read = await readOperation({ runtime, toolNames: [name] }, caller, name, 'q');
    expect({ status: (read as { status?: string }).status, beforeTtl: Date.now() < expiresAtS * 1000 }).toEqual({
      status: 'stalled',
      beforeTtl: true,
    });
  });
});
