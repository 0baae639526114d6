// Rule 8 (docs/state-machine.md): every call ends, in a time its answers state.
/**
 * Review 34 of 4b36ef5 (rule 2: a caller's resend whose lock ends past the call's last look takes it over and
 * gives it up in advance, `TakeOver.givesUpInAdvance`). Each `describe` holds one finding; its test fails on
 * 4b36ef5 for the reason its title states. F1 (safety) and F2 (wording): an attempt given up in advance parks to
 * its last lock end, TTL − 10 s, where no resend fits — the answers lead its caller to a fresh claim past the TTL
 * (a window's call under its own key) and the poll says a resend runs it now. F3 (liveness): a park past the
 * last look by an attempt not given up (run past its lock). F4 (liveness, wording): a long lock given up in
 * advance minutes early: a transient failure is stalled `expiring` though a re-run fits. Fixed at rule 2: a
 * park ends by the last look unless its claim gave the call up in advance (`latestParkEndMs`, F3), a park that
 * ends by it withdraws a give-up in advance (`park`, F4), and a stalled call's wait is to its TTL once no
 * resend fits (`stalledChangesAtMs`, F2). F1 — the fresh claim past the TTL under a window call's own key — is
 * fixed at the claim: an expired record of the same arguments in flight that fixed a key not its own is claimed
 * anew keeping the key (`claimKeeping`, claim-writes.ts); its refused resend is still told one effect is not
 * promised (`runs_anew`: DynamoDB's sweep may delete the expired record first).
 */
import { nextAfterWrite } from '../../lib/api/next-step';
import { completerDueAtMs, completerLooksAtMs, expiresBeforeRerun, lastLookMs } from '../../lib/idempotency/backoff';
import { InFlightError } from '../../lib/idempotency/errors';
import type { ToolRuntime } from '../../lib/idempotency/runtime';
import { readTask } from '../../lib/idempotency/task';
import { livenessWorld, RESEND_INVOCATION_MS } from '../helpers/liveness-world';
import { recordIdsOf, throttleNextRecordUpdate } from '../helpers/no-effect';
import { deadline, identity, type ProtocolWorld } from '../helpers/protocol-world';
import { noteTool } from '../helpers/tools';

const live = livenessWorld('liveness-review34');
const { clockAt, itemOf, scheduleOf, completerFor, streamImage, poll } = live;
let world: ProtocolWorld;
let runtime: ToolRuntime;
beforeAll(() => {
  ({ world, runtime } = live);
});

describe('review34 F1: a resend after a window call’s last look gives it up in advance and runs under the record’s fixed key; a provider’s InFlightError parks it to its last lock end (TTL − 10 s, `latestParkEndMs`) and answers `pending` until then — but at that time no takeover fits (every lock would end past TTL − 10 s), so the resend the answer asks for is `pending` to the TTL, and past it a fresh claim runs the window’s call under its own key, while the provider still runs the fixed one: a second effect (review 33 F2, reached now by following the answers of a given-up-in-advance attempt)', () => {
  // Fixed at the claim (claimKeeping): past the TTL the fresh claim over B's expired record, in flight with
  // A's key fixed, keeps that key in its own write: the provider's one key, one effect.
  it('B takes over A’s window and dies; resent a second after its last look, the provider says the key still runs (10 h); the caller follows every answer: its tool runs under two downstream keys', async () => {
    const keys: string[] = [];
    let mode: 'die' | 'in_flight' | 'ok' = 'die';
    const { tool } = noteTool(
      `window_${Math.random().toString(36).slice(2, 10)}`,
      async (args, context) => {
        keys.push(context.downstreamKey);
        if (mode === 'in_flight') throw new InFlightError('the provider still runs this key', 10 * 3_600_000);
        if (mode === 'die') throttleNextRecordUpdate(world); // the worker dies before its store
        return { receipt: { note_id: `note_${keys.length}`, text: args.text }, replayed: false };
      },
      { ttlSeconds: 3_600, dedupeWindowSeconds: 600 },
    );
    const caller = identity();
    const t0 = Date.now();
    clockAt(t0);
    await runtime.invoke(tool, caller, { idempotency_key: 'a', text: 'x' }, deadline());
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

    // B's caller resends a second after the last look (a 10 s stack function): taken over, given up in advance;
    // the provider answers that the fixed key still runs.
    mode = 'in_flight';
    let nowMs = lastLook + 1_000;
    clockAt(nowMs);
    const first = (await runtime.invoke(
      tool,
      caller,
      { idempotency_key: 'b', text: 'x' },
      deadline(RESEND_INVOCATION_MS),
    )) as { ok: boolean; status?: string; retry_after_ms?: number };
    const taken = await itemOf(b.id);
    expect(taken.stalled_claim).toBe(taken.claim_id);
    const trail = [
      `resend at last look + 1 s: ${first.status ?? (first.ok ? 'ok' : 'failed')} ${first.retry_after_ms} ms (lock to TTL − ${(ttlMs - Number(taken.in_progress_expiration)) / 1000} s)`,
    ];
    // The caller follows every answer: asks again when told, until it gets an outcome.
    mode = 'ok';
    let answer = first;
    for (let i = 0; i < 6 && answer.status === 'pending'; i++) {
      nowMs += Math.max(answer.retry_after_ms ?? 0, 1);
      clockAt(nowMs);
      const read = await poll(caller, tool.name, 'b');
      answer = (await runtime.invoke(
        tool,
        caller,
        { idempotency_key: 'b', text: 'x' },
        deadline(RESEND_INVOCATION_MS),
      )) as { ok: boolean; status?: string; retry_after_ms?: number; idempotent?: boolean };
      trail.push(
        `at TTL ${nowMs >= ttlMs ? '+' : '−'} ${Math.abs(nowMs - ttlMs) / 1000} s: poll ${read.status}/${read.gives_up ?? ''} ${read.retry_after_ms ?? '-'} ms; resend ${answer.status ?? (answer.ok ? 'ok' : 'failed')} ${answer.retry_after_ms ?? ''}`,
      );
    }
    const distinct = [...new Set(keys)];
    const values = `${trail.join('; ')}; the tool ran ${keys.length} times under ${distinct.length} downstream keys`;
    expect({ downstreamKeys: distinct.length, values }).toEqual({ downstreamKeys: 1, values });
  });
});

describe('review34 F1, what is fixed: a refused resend of a window call whose record fixed another call’s key, in its record’s last seconds, is told that past the TTL calling again runs it anew and can act twice (`runs_anew`), not “it will not run twice”', () => {
  it('B runs under A’s key and dies; its resend 15 s before the TTL (a 10 s lock) is pending to a second past the TTL, runs_anew, told to check first', async () => {
    const keys: string[] = [];
    const { tool } = noteTool(
      `window_${Math.random().toString(36).slice(2, 10)}`,
      async (args, context) => {
        keys.push(context.downstreamKey);
        throttleNextRecordUpdate(world); // the worker dies before its store
        return { receipt: { note_id: `note_${keys.length}`, text: args.text }, replayed: false };
      },
      { ttlSeconds: 3_600, dedupeWindowSeconds: 600 },
    );
    const caller = identity();
    const t0 = Date.now();
    clockAt(t0);
    await runtime.invoke(tool, caller, { idempotency_key: 'a', text: 'x' }, deadline());
    clockAt(t0 + 20_000);
    await runtime.invoke(tool, caller, { idempotency_key: 'b', text: 'x' }, deadline());
    expect(keys).toEqual([keys[0], keys[0]]);
    const ids = await recordIdsOf(world, caller.tenant);
    const records = await Promise.all(ids.map((id) => itemOf(id)));
    const b = records.find((item) => item.downstream_key === keys[0] && Number(item.created_at) === t0 + 20_000)!;
    const ttlMs = Number(b.expiration) * 1000;
    clockAt(ttlMs - 15_000);
    const resent = (await runtime.invoke(
      tool,
      caller,
      { idempotency_key: 'b', text: 'x' },
      deadline(RESEND_INVOCATION_MS),
    )) as { ok: boolean; status?: string; retry_after_ms?: number; runs_anew?: boolean };
    expect(resent).toMatchObject({ ok: false, status: 'pending', retry_after_ms: 16_000, runs_anew: true });
    expect(nextAfterWrite(tool.name, resent as never).message).toMatch(/can act twice: first check with a read/);
  });
});

describe('review34 F2: an attempt given up in advance that parks to its last lock end (a provider’s InFlightError after the last look: TTL − 10 s) leaves a call `stalled` by its record alone exactly when no resend can run it — yet its poll says `stalled` with no wait and “resend the same arguments with the same key to run it again” and its MCP task polls in a minute, while the resend is `pending` ≈ 11 s, to the TTL (review 33 F1’s inconsistency, now reached from the state 4b36ef5 adds)', () => {
  it('a resend a second after the last look parks on the provider’s wait; polled a moment past its lock, the poll and the resend disagree on when it can next run', async () => {
    let inFlight = false;
    const { tool, execute } = noteTool(
      `pre_${Math.random().toString(36).slice(2, 10)}`,
      async (args) => {
        if (inFlight) throw new InFlightError('the provider still runs this key', 10 * 3_600_000);
        throttleNextRecordUpdate(world); // the worker dies before its store
        return { receipt: { note_id: `note_${Math.random()}`, text: args.text }, replayed: false };
      },
      { ttlSeconds: 3_600 },
    );
    const caller = identity();
    clockAt(Date.now());
    await runtime.invoke(tool, caller, { idempotency_key: 'p', text: 'x' }, deadline());
    const [key] = await recordIdsOf(world, caller.tenant);
    const record = await itemOf(key);
    const ttlMs = Number(record.expiration) * 1000;
    const lastLook = lastLookMs(Number(record.expiration));
    // The completer gives it up at its last look (its re-run's lock would end past it).
    const abandoned = await itemOf(key);
    clockAt(lastLook);
    const completer = completerFor([tool]);
    await streamImage(completer, abandoned);
    // A resend a second after the last look: given up in advance; the provider says the key still runs.
    inFlight = true;
    clockAt(lastLook + 1_000);
    const parked = (await runtime.invoke(
      tool,
      caller,
      { idempotency_key: 'p', text: 'x' },
      deadline(RESEND_INVOCATION_MS),
    )) as { status?: string; retry_after_ms?: number };
    const taken = await itemOf(key);
    expect(taken.stalled_claim).toBe(taken.claim_id);
    expect(Number(taken.in_progress_expiration)).toBe(ttlMs - 10_000);
    // A moment past its lock: stalled by its record alone.
    inFlight = false;
    const askedMs = ttlMs - 9_000;
    clockAt(askedMs);
    const read = await poll(caller, tool.name, 'p');
    const task = await readTask(runtime, tool, caller, 'p');
    const runsBefore = execute.mock.calls.length;
    const resent = (await runtime.invoke(
      tool,
      caller,
      { idempotency_key: 'p', text: 'x' },
      deadline(RESEND_INVOCATION_MS),
    )) as { ok: boolean; status?: string; retry_after_ms?: number };
    const ran = execute.mock.calls.length > runsBefore;
    const values = `parked resend: ${parked.status} ${parked.retry_after_ms} ms; at TTL − 9 s poll: ${read.status}/${(read as { reason?: string }).reason ?? ''} retry_after_ms ${read.retry_after_ms}, hint “${read.hint?.slice(0, 70)}…”; task pollInterval ${task && 'pollIntervalMs' in task ? task.pollIntervalMs : '-'} ms; resend: ${resent.status ?? (resent.ok ? 'ok' : 'failed')} ${resent.retry_after_ms} ms, ran: ${ran}`;
    expect({
      consistent:
        ran || (read.retry_after_ms !== undefined && read.retry_after_ms >= (resent.retry_after_ms ?? 0) - 1_000),
      values,
    }).toEqual({ consistent: true, values });
  });
});

describe('review34 F3: `latestParkEndMs` lets any park at or past the last look run to the TTL − 10 s, on the claim that only an attempt given up in advance parks then — but an attempt whose lock ended by the last look (not given up) that is still running past its lock (rule 2: “a holder still running past its lock is safe”) and meets a provider’s InFlightError parks its call, not given up, to TTL − 10 s: cron’s look, a minute late, comes past the TTL and the call expires unreported (review 31 F1 again; rule 2’s “no lock past the last look unless given up in advance” broken by a park)', () => {
  it('a resend 15 s before the last look with a 10 s lock runs 16 s (6 s past its lock) and the provider says the key still runs: parked to TTL − 10 s with no give-up; cron a minute late finds it expired', async () => {
    let slowInFlight = false;
    const { tool } = noteTool(
      `late_${Math.random().toString(36).slice(2, 10)}`,
      async (args) => {
        if (slowInFlight) {
          // The tool's provider call outlasts the invocation's lock by a second (a host that does not stop it).
          clockAt(Date.now() + 16_000);
          throw new InFlightError('the provider still runs this key', 10 * 3_600_000);
        }
        throttleNextRecordUpdate(world); // the worker dies before its store
        return { receipt: { note_id: `note_${Math.random()}`, text: args.text }, replayed: false };
      },
      { ttlSeconds: 3_600 },
    );
    const caller = identity();
    clockAt(Date.now());
    await runtime.invoke(tool, caller, { idempotency_key: 'l', text: 'x' }, deadline());
    const [key] = await recordIdsOf(world, caller.tenant);
    const record = await itemOf(key);
    const ttlMs = Number(record.expiration) * 1000;
    const lastLook = lastLookMs(Number(record.expiration));
    slowInFlight = true;
    clockAt(lastLook - 15_000);
    const answer = (await runtime.invoke(
      tool,
      caller,
      { idempotency_key: 'l', text: 'x' },
      deadline(RESEND_INVOCATION_MS),
    )) as { status?: string; retry_after_ms?: number };
    const parked = await itemOf(key);
    const givenUp = parked.stalled_claim !== undefined && parked.stalled_claim === parked.claim_id;
    const lockMs = Number(parked.in_progress_expiration);
    const lookMs = completerLooksAtMs(scheduleOf(parked));
    // `retrysafe complete` from cron: up to a minute late after the look the record states.
    const cronMs = lookMs + 60_000;
    clockAt(cronMs);
    const completer = completerFor([tool]);
    const outcome = await completer.onRecheck({ key: String(key), claim: String(parked.claim_id) }, deadline(60_000));
    const after = await poll(caller, tool.name, 'l');
    const values = `resend at last look − 15 s, lock to last look − 5 s; parked at last look + 1 s: ${answer.status} ${answer.retry_after_ms} ms, lock to TTL − ${(ttlMs - lockMs) / 1000} s (last look + ${(lockMs - lastLook) / 1000} s), given up in advance: ${givenUp}; completer's look at TTL − ${(ttlMs - lookMs) / 1000} s; cron at TTL + ${(cronMs - ttlMs) / 1000} s: ${outcome}, poll then ${after.status ?? JSON.stringify(after).slice(0, 60)}`;
    // Rule 2: a lock past the last look only on a call given up in advance — or the call is reported stalled before its TTL.
    expect({ lockByLastLookOrGivenUp: lockMs <= lastLook || givenUp, values }).toEqual({
      lockByLastLookOrGivenUp: true,
      values,
    });
  });
});

describe('review34 F4: a takeover gives the call up in advance whenever its lock ends past the last look — however long before it it starts — so an attempt with a long lock (a 5 min invocation taken 4 min before the last look) that fails at once leaves the call `stalled`, `expiring`, minutes before any completer would give it up: the completer never re-runs it (its image is skipped), though a re-run fits by the record’s own rule (`expiresBeforeRerun` false), and its poll says “its record expires before another attempt could end” — untrue; the same failure under a lock ending by the last look is re-run with its backoff', () => {
  it('a resend with a 300 s deadline 4 min before the last look fails at once (a transient error): stalled, expiring; the stream schedules no recheck; the record itself says a re-run is not too late', async () => {
    let fail = false;
    const { tool } = noteTool(
      `long_${Math.random().toString(36).slice(2, 10)}`,
      async (args) => {
        if (fail) throw new Error('the provider timed out');
        throttleNextRecordUpdate(world); // the worker dies before its store
        return { receipt: { note_id: `note_${Math.random()}`, text: args.text }, replayed: false };
      },
      { ttlSeconds: 3_600 },
    );
    const caller = identity();
    clockAt(Date.now());
    await runtime.invoke(tool, caller, { idempotency_key: 'f', text: 'x' }, deadline());
    const [key] = await recordIdsOf(world, caller.tenant);
    const record = await itemOf(key);
    const ttlMs = Number(record.expiration) * 1000;
    const lastLook = lastLookMs(Number(record.expiration));
    fail = true;
    const askedMs = lastLook - 240_000;
    clockAt(askedMs);
    const answer = (await runtime.invoke(tool, caller, { idempotency_key: 'f', text: 'x' }, deadline(300_000))) as {
      ok: boolean;
      error?: { code?: string };
    };
    const failedItem = await itemOf(key);
    const schedule = scheduleOf(failedItem);
    clockAt(askedMs + 1_000);
    const completer = completerFor([tool]);
    const streamed = await streamImage(completer, failedItem);
    const read = await poll(caller, tool.name, 'f');
    const rerunFits = !expiresBeforeRerun(schedule);
    const values = `failed at last look − 240 s (TTL − ${(ttlMs - askedMs) / 1000} s): answer ${answer.ok ? 'ok' : answer.error?.code}; record attempt ${failedItem.attempt}, stalled on its claim: ${failedItem.stalled_claim === failedItem.claim_id} (${failedItem.stalled_reason}); due ${(completerDueAtMs(schedule) - askedMs) / 1000} s on, re-run fits by expiresBeforeRerun: ${rerunFits}; rechecks scheduled ${streamed.rechecksScheduled}; poll ${read.status}, hint “${read.hint?.slice(0, 90)}…”`;
    // A stalled `expiring` call is one no re-run can end before its record expires — or the completer re-runs it.
    expect({
      truthful: read.status !== 'stalled' || !rerunFits || streamed.rechecksScheduled > 0,
      values,
    }).toEqual({ truthful: true, values });
  });
});

describe('review34 F1, the rule: a fresh claim over an expired record of the same arguments still in flight with a key not its own fixed is that call resent — it keeps the key (`claimKeeping`), whatever window it is asked in', () => {
  /** A's window taken over by B (B runs under A's key and dies): the tool, its downstream keys, and B's record. */
  async function takenOverWindow() {
    const keys: string[] = [];
    let mode: 'die' | 'ok' = 'die';
    const { tool } = noteTool(
      `rule_${Math.random().toString(36).slice(2, 10)}`,
      async (args, context) => {
        keys.push(context.downstreamKey);
        if (mode === 'die') throttleNextRecordUpdate(world); // the worker dies before its store
        return { receipt: { note_id: `note_${keys.length}`, text: args.text }, replayed: false };
      },
      { ttlSeconds: 3_600, dedupeWindowSeconds: 600 },
    );
    const caller = identity();
    const t0 = Date.now();
    clockAt(t0);
    await runtime.invoke(tool, caller, { idempotency_key: 'a', text: 'x' }, deadline());
    clockAt(t0 + 20_000);
    await runtime.invoke(tool, caller, { idempotency_key: 'b', text: 'x' }, deadline());
    expect(keys).toEqual([keys[0], keys[0]]);
    const ids = await recordIdsOf(world, caller.tenant);
    const records = await Promise.all(ids.map((id) => itemOf(id)));
    const b = records.find((item) => Number(item.created_at) === t0 + 20_000)!;
    return { tool, caller, keys, b, setMode: (next: 'die' | 'ok') => (mode = next) };
  }
  type Answer = { ok: boolean; status?: string; idempotent?: boolean; retry_after_ms?: number };

  it('B expires unreported; another key asks the same after it and opens a new window (its own key, a new effect); B’s key resent then runs under A’s window’s key, not the new window’s answer nor its own', async () => {
    const { tool, caller, keys, b, setMode } = await takenOverWindow();
    setMode('ok');
    const pastB = Number(b.expiration) * 1000 + 5_000;
    clockAt(pastB);
    const c = (await runtime.invoke(tool, caller, { idempotency_key: 'c', text: 'x' }, deadline())) as Answer;
    expect(c).toMatchObject({ ok: true, idempotent: false });
    expect(keys[2]).not.toBe(keys[0]);
    clockAt(pastB + 10_000);
    const resent = (await runtime.invoke(tool, caller, { idempotency_key: 'b', text: 'x' }, deadline())) as Answer;
    expect({ ok: resent.ok, key: keys[3] }).toEqual({ ok: true, key: keys[0] });
  });

  it('B’s key resent past its TTL takes A’s window over and dies; its own resend a minute later runs it under the window’s key at once, not pending behind itself', async () => {
    const { tool, caller, keys, b, setMode } = await takenOverWindow();
    const pastB = Number(b.expiration) * 1000 + 5_000;
    clockAt(pastB);
    await runtime.invoke(tool, caller, { idempotency_key: 'b', text: 'x' }, deadline()); // dies again
    expect(keys).toEqual([keys[0], keys[0], keys[0]]);
    setMode('ok');
    clockAt(pastB + 60_000);
    const resent = (await runtime.invoke(tool, caller, { idempotency_key: 'b', text: 'x' }, deadline())) as Answer;
    expect({ status: resent.status ?? (resent.ok ? 'ok' : 'failed'), runs: keys.length, key: keys[3] }).toEqual({
      status: 'ok',
      runs: 4,
      key: keys[0],
    });
  });
});
