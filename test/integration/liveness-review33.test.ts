// Rule 8 (docs/state-machine.md): every call ends, in a time its answers state.
/**
 * Review 33 (helper-56) of 6f1560d (rule 2 then: no lock of any kind ends past its record's last look, TTL −
 * 70 s). Each `describe` holds one finding; its test fails on 6f1560d for the reason its title states. Fixed
 * at the rule: F1 and F2 — a takeover whose lock ends past the last look gives the call up in advance
 * (`TakeOver.givesUpInAdvance`: stalled on its own claim, `expiring`, in the same write) instead of being
 * refused until the TTL, so a resend after the last look runs the call under the key its record fixed; F3 —
 * `retrysafe calls` ages a call from its `created_at`; F4 — a wait to the TTL ends a second past it
 * (`expiredFromMs`).
 */
import { callsInFlight } from '../../lib/admin/calls-in-flight';
import { nextAfterWrite } from '../../lib/api/next-step';
import { completerLooksAtMs, lastLookMs } from '../../lib/idempotency/backoff';
import type { ToolRuntime } from '../../lib/idempotency/runtime';
import { readTask } from '../../lib/idempotency/task';
import { livenessWorld, RESEND_INVOCATION_MS } from '../helpers/liveness-world';
import { recordIdsOf, throttleNextRecordUpdate } from '../helpers/no-effect';
import { deadline, identity, type ProtocolWorld } from '../helpers/protocol-world';
import { noteTool } from '../helpers/tools';

const live = livenessWorld('liveness-review33');
const { clockAt, itemOf, scheduleOf, completerFor, streamImage, poll } = live;
let world: ProtocolWorld;
let runtime: ToolRuntime;
beforeAll(() => {
  ({ world, runtime } = live);
});

describe('review33 F1: a call the completer gives up at its last look (`stalled`, `expiring`) is told “resend the same arguments with the same key to run it again” (its poll: no wait; its task: poll in 60 s), but since 6f1560d no resend can take it over before its TTL — any lock taken at or after the last look ends past it (`ttlNeededFor` + 70 s) — so every resend is `pending` for the whole 70 s to the TTL, then runs it as a fresh claim (before 6f1560d a 10 s resend fitted in the minute after the last look)', () => {
  it('a resend’s 4 s takeover 5 s before the last look dies; the stack gives the call up at its last look; the poll and the task then promise a resend runs it, and a resend is pending to the TTL', async () => {
    const { tool, execute } = noteTool(
      `stall_${Math.random().toString(36).slice(2, 10)}`,
      async (args) => {
        throttleNextRecordUpdate(world); // every worker dies before its store
        return { receipt: { note_id: `note_${Math.random()}`, text: args.text }, replayed: false };
      },
      { ttlSeconds: 3_600 },
    );
    const caller = identity();
    const t0 = Date.now();
    clockAt(t0);
    await runtime.invoke(tool, caller, { idempotency_key: 's', text: 'x' }, deadline());
    const [key] = await recordIdsOf(world, caller.tenant);
    const first = await itemOf(key);
    const ttlMs = Number(first.expiration) * 1000;
    const lastLook = lastLookMs(Number(first.expiration));

    // A resend 5 s before the last look with a 4 s invocation takes it over (its lock ends by the last look); it dies.
    clockAt(lastLook - 5_000);
    await runtime.invoke(tool, caller, { idempotency_key: 's', text: 'x' }, deadline(4_000));
    const taken = await itemOf(key);
    expect(taken.attempt).toBe(2);
    const lookMs = completerLooksAtMs(scheduleOf(taken));
    expect(lookMs).toBe(lastLook);

    // The stack's completer looks at its last look: gives it up (its re-run's lock would end past that look).
    clockAt(lookMs);
    const completer = completerFor([tool]);
    await streamImage(completer, taken);
    const outcome = await completer.onRecheck({ key: String(key), claim: String(taken.claim_id) }, deadline(60_000));
    expect(outcome).toBe('gave_up');

    // A second later the caller polls: stalled, “resend … to run it again”, no wait; its MCP task alike.
    const askedMs = lookMs + 1_000;
    clockAt(askedMs);
    const read = await poll(caller, tool.name, 's');
    const task = await readTask(runtime, tool, caller, 's');
    // It resends, as told, from a stack function (a 10 s invocation).
    const runsBefore = execute.mock.calls.length;
    const resent = (await runtime.invoke(
      tool,
      caller,
      { idempotency_key: 's', text: 'x' },
      deadline(RESEND_INVOCATION_MS),
    )) as { ok: boolean; status?: string; retry_after_ms?: number };
    const ran = execute.mock.calls.length > runsBefore;
    const values = `poll: ${read.status}/${(read as { reason?: string }).reason ?? ''} retry_after_ms ${read.retry_after_ms}, hint “${read.hint?.slice(0, 60)}…”; task pollInterval ${task && 'pollIntervalMs' in task ? task.pollIntervalMs : '-'} ms; resend: ${resent.status ?? (resent.ok ? 'ok' : 'failed')} ${resent.retry_after_ms} ms (TTL − now ${(ttlMs - askedMs) / 1000} s), ran: ${ran}`;
    // What the poll says a resend does is what it does: it runs the call now — or the poll (and the task) say the
    // wait a resend gets, to the TTL, as they do for a Powertools handler's stalled call.
    expect({
      consistent:
        ran || (read.retry_after_ms !== undefined && read.retry_after_ms >= (resent.retry_after_ms ?? 0) - 1_000),
      values,
    }).toEqual({ consistent: true, values });
  });
});

describe('review33 F2: a dedupe-window call that ran under the intent it took over (its record’s fixed downstream key), given up at its last look, is told “resend … to run it again — it cannot act twice”; its resend is refused until the TTL (F1: no takeover fits after the last look), and the resend its `pending` answer asks for then claims it afresh — under the call’s own key, not the fixed one: a second effect, answered `idempotent: false` again (before 6f1560d a resend in the minute after the last look took it over and ran under the fixed key)', () => {
  it('B takes over A’s abandoned window, runs under A’s key and dies; resent 5 s before its last look it dies again; given up at the last look; the caller follows every answer: its tool runs under two downstream keys', async () => {
    const keys: string[] = [];
    let die = true;
    const { tool } = noteTool(
      `window_${Math.random().toString(36).slice(2, 10)}`,
      async (args, context) => {
        keys.push(context.downstreamKey);
        if (die) throttleNextRecordUpdate(world); // the worker dies before its store
        return { receipt: { note_id: `note_${keys.length}`, text: args.text }, replayed: false };
      },
      { ttlSeconds: 3_600, dedupeWindowSeconds: 600 },
    );
    const caller = identity();
    const t0 = Date.now();
    // A: creates the window's intent under its own key, runs, dies before its store.
    clockAt(t0);
    await runtime.invoke(tool, caller, { idempotency_key: 'a', text: 'x' }, deadline());
    // B, the same arguments 20 s later inside the window, A abandoned: takes the intent over, runs under A's key, dies.
    clockAt(t0 + 20_000);
    await runtime.invoke(tool, caller, { idempotency_key: 'b', text: 'x' }, deadline());
    expect(keys).toHaveLength(2);
    expect(keys[1]).toBe(keys[0]);
    const ids = await recordIdsOf(world, caller.tenant);
    const records = await Promise.all(ids.map((id) => itemOf(id)));
    const b = records.find((item) => item.downstream_key === keys[0] && Number(item.created_at) === t0 + 20_000)!;
    expect(b).toBeDefined();
    const ttlMs = Number(b.expiration) * 1000;
    const lastLook = lastLookMs(Number(b.expiration));

    // B's caller resends 5 s before its last look (a 4 s invocation: it fits); it runs under the fixed key and dies.
    clockAt(lastLook - 5_000);
    await runtime.invoke(tool, caller, { idempotency_key: 'b', text: 'x' }, deadline(4_000));
    const taken = await itemOf(b.id);
    expect(taken.attempt).toBe(2);
    // The completer gives B up at its last look.
    clockAt(completerLooksAtMs(scheduleOf(taken)));
    const completer = completerFor([tool]);
    await streamImage(completer, taken);
    expect(await completer.onRecheck({ key: String(b.id), claim: String(taken.claim_id) }, deadline(60_000))).toBe(
      'gave_up',
    );

    // The caller polls: stalled, “resend … it cannot act twice”. It resends (a 10 s stack function): pending.
    const askedMs = lastLook + 1_000;
    clockAt(askedMs);
    const read = await poll(caller, tool.name, 'b');
    expect(read.hint).toMatch(/cannot act twice/);
    die = false;
    const resent = (await runtime.invoke(
      tool,
      caller,
      { idempotency_key: 'b', text: 'x' },
      deadline(RESEND_INVOCATION_MS),
    )) as { ok: boolean; status?: string; retry_after_ms?: number; idempotent?: boolean };
    // It asks again when the pending answer says.
    const againMs = askedMs + (resent.retry_after_ms ?? 0) + 1_000;
    clockAt(againMs);
    const again = (await runtime.invoke(
      tool,
      caller,
      { idempotency_key: 'b', text: 'x' },
      deadline(RESEND_INVOCATION_MS),
    )) as { ok: boolean; idempotent?: boolean };
    const distinct = [...new Set(keys)];
    const told = nextAfterWrite(tool.name, resent as never).message;
    const values = `resend at the last look + 1 s: ${resent.status ?? (resent.ok ? 'ok' : 'failed')} ${resent.retry_after_ms} ms (TTL at + ${(ttlMs - askedMs) / 1000} s), told “${told.slice(0, 70)}…”; asked again at TTL + ${(againMs - ttlMs) / 1000} s: ok ${again.ok}, idempotent ${again.idempotent}; the tool ran ${keys.length} times under ${distinct.length} downstream keys`;
    // Every run of the window's call under one downstream key: its effect once, whatever the caller followed.
    expect({ downstreamKeys: distinct.length, values }).toEqual({ downstreamKeys: 1, values });
  });
});

describe('review33 F3: a first claim whose lock ends within 70 s of now + the tool’s TTL (a tool at `MIN_TTL_SECONDS`, 910 s, claimed with a 15 min lock) has its TTL lengthened by up to a minute, but `retrysafe calls` (`callsInFlight`) still tells a call’s age from its TTL less the tool’s `ttlSeconds`: the operator is shown it a minute younger than it is (the record carries `created_at`)', () => {
  it('a 910 s tool claimed with a 900 s invocation, its worker dead: 100 s later it is listed 40 s old', async () => {
    const { tool } = noteTool(
      `short_${Math.random().toString(36).slice(2, 10)}`,
      async (args) => {
        throttleNextRecordUpdate(world); // the worker dies before its store
        return { receipt: { note_id: 'n', text: args.text }, replayed: false };
      },
      { ttlSeconds: 910 },
    );
    const caller = identity();
    const t0 = Date.now();
    clockAt(t0);
    await runtime.invoke(tool, caller, { idempotency_key: 'm', text: 'x' }, deadline(900_000));
    const [key] = await recordIdsOf(world, caller.tenant);
    const item = await itemOf(key);
    const nowMs = t0 + 100_000;
    clockAt(nowMs);
    const { calls } = await callsInFlight(world.client, world.idempotencyTable.tableName, caller.tenant, {
      ttlSecondsByTool: { [tool.name]: 910 },
      nowMs,
    });
    const values = `TTL − created_at = ${Number(item.expiration) - Math.round(Number(item.created_at) / 1000)} s (tool’s ttlSeconds 910); listed age ${calls[0]?.ageSeconds} s, 100 s after its first claim`;
    expect({ ageSeconds: calls[0]?.ageSeconds, values }).toEqual({ ageSeconds: 100, values });
  });
});

describe('review33 F4: a resend refused until the TTL (`takeOverOnce`: `pending`, `afterMs` = TTL − now) is told to come back at exactly the TTL, when the record has not expired (`classify` and the claim’s `#expiry < :now` count `expiration = now` as alive): the resend at the stated time is `pending` again (100 ms) — the wait stated is short of the time the call can next change (the more often since 6f1560d: every resend at or after the last look is refused)', () => {
  it('a call given up at its last look: a resend is pending N ms; the resend N ms later still does not run it', async () => {
    const { tool, execute } = noteTool(
      `edge_${Math.random().toString(36).slice(2, 10)}`,
      async (args) => {
        throttleNextRecordUpdate(world); // every worker dies before its store
        return { receipt: { note_id: `note_${Math.random()}`, text: args.text }, replayed: false };
      },
      { ttlSeconds: 3_600 },
    );
    const caller = identity();
    clockAt(Date.now());
    await runtime.invoke(tool, caller, { idempotency_key: 'e', text: 'x' }, deadline());
    const [key] = await recordIdsOf(world, caller.tenant);
    const first = await itemOf(key);
    const lastLook = lastLookMs(Number(first.expiration));
    clockAt(lastLook - 5_000);
    await runtime.invoke(tool, caller, { idempotency_key: 'e', text: 'x' }, deadline(4_000));
    const taken = await itemOf(key);
    clockAt(lastLook);
    const completer = completerFor([tool]);
    await streamImage(completer, taken);
    expect(await completer.onRecheck({ key: String(key), claim: String(taken.claim_id) }, deadline(60_000))).toBe(
      'gave_up',
    );
    // A resend 15 s before the TTL: its 10 s lock would end past the TTL − 10 s (rule 2) — refused, pending.
    const askedMs = Number(first.expiration) * 1000 - 15_000;
    clockAt(askedMs);
    const resent = (await runtime.invoke(
      tool,
      caller,
      { idempotency_key: 'e', text: 'x' },
      deadline(RESEND_INVOCATION_MS),
    )) as { status?: string; retry_after_ms?: number };
    expect(resent.status).toBe('pending');
    const againMs = askedMs + (resent.retry_after_ms ?? 0);
    clockAt(againMs);
    const runsBefore = execute.mock.calls.length;
    const again = (await runtime.invoke(
      tool,
      caller,
      { idempotency_key: 'e', text: 'x' },
      deadline(RESEND_INVOCATION_MS),
    )) as { ok: boolean; status?: string; retry_after_ms?: number };
    const values = `pending ${resent.retry_after_ms} ms at TTL − ${(Number(first.expiration) * 1000 - askedMs) / 1000} s; at the stated time (TTL + ${againMs - Number(first.expiration) * 1000} ms): ${again.status ?? (again.ok ? 'ok' : 'failed')} ${again.retry_after_ms ?? ''}`;
    expect({ ranAtTheStatedTime: execute.mock.calls.length > runsBefore, values }).toEqual({
      ranAtTheStatedTime: true,
      values,
    });
  });
});
