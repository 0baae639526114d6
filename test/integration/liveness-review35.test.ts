// Rule 8 (docs/state-machine.md): every call ends, in a time its answers state.
/**
 * Review 35 of dfaf933..8d56e32 (rule 2: a park ends by the last look unless its claim gave the call up in
 * advance; a park that ends by it withdraws the give-up; a stalled call's poll and task wait to a second past
 * its TTL once no resend fits, `stalledChangesAtMs` with now). Each `describe` holds one finding; its test
 * fails on 8d56e32 for the reason its title states. F1–F3 are wording (rule 8's "what the answers state"), found
 * where review 34 F2's rule — from the TTL − 10 s nothing moves a stalled call before a second past its TTL —
 * was not carried: F1, erase's change time of a stalled call (`nextChangeAtMs`); F2, a stalled call's poll,
 * whose hint and `next` word what calling again past the TTL does apart from each other and from the resend
 * (which reads the key the call runs under); F3, erase's wait for a completed record it cannot attribute ends
 * at its TTL, not a second past it (review 33 F4's rule, `expiredFromMs`). F4 (liveness, wording): review 34 F3's
 * park at the last look, for an attempt not given up that meets a provider's wait past it, ends a lock already
 * ended — answered 100 ms, the tool run again at once, as review 32 F2 was. Looked at and not found wanting: `park`'s REMOVE (only the
 * parking claim's own give-up: its condition is its claim, and no other writer sets `stalled_claim` to a live
 * claim — the completer skips and never marks a live lock); a completed record's leftover `stalled_claim` (no
 * reader classifies a completed record by it); erase and the intent code on holders given up in advance
 * (`classify` makes them live, then stalled, as any other). Fixed at the rules: every wait to the TTL, erase's
 * included, ends a second past it and reads `stalledChangesAtMs` with now (F1, F3); past its TTL a call's record
 * and its promise are gone, so every answer whose wait ends there says `runs_anew` — the poll's, with its hint and
 * `next`, and the refused resend's alike (F2); whether a call is given up follows from its lock's end: a park
 * past the last look gives it up in the same write and waits to the TTL − 10 s (F4).
 */
import { PutItemCommand } from '@aws-sdk/client-dynamodb';
import { eraseTenant } from '../../lib/admin/erase-tenant';
import { nextAfterRead, nextAfterWrite } from '../../lib/api/next-step';
import { expiredFromMs, lastLookMs } from '../../lib/idempotency/call-state';
import { InFlightError } from '../../lib/idempotency/errors';
import { eraseItem } from '../../lib/idempotency/protocol/erase';
import type { ToolRuntime } from '../../lib/idempotency/runtime';
import { readTask } from '../../lib/idempotency/task';
import type { ToolDefinition } from '../../lib/idempotency/tool';
import { livenessWorld, RESEND_INVOCATION_MS } from '../helpers/liveness-world';
import { recordIdsOf, throttleNextRecordUpdate } from '../helpers/no-effect';
import { deadline, identity, type ProtocolWorld } from '../helpers/protocol-world';
import { noteTool } from '../helpers/tools';

const live = livenessWorld('liveness-review35');
const { clockAt, itemOf, completerFor, streamImage, poll } = live;
let world: ProtocolWorld;
let runtime: ToolRuntime;
beforeAll(() => {
  ({ world, runtime } = live);
});

/** A call that dies before its store (its record left in flight), given up by the completer at its last look. */
async function stalledAtLastLook(tool: ToolDefinition, caller: ReturnType<typeof identity>, key: string) {
  clockAt(Date.now());
  await runtime.invoke(tool, caller, { idempotency_key: key, text: 'x' }, deadline());
  const [id] = await recordIdsOf(world, caller.tenant);
  const abandoned = await itemOf(id);
  const ttlS = Number(abandoned.expiration);
  clockAt(lastLookMs(ttlS));
  const completer = completerFor([tool]);
  await streamImage(completer, abandoned);
  await completer.onRecheck({ key: String(id), claim: String(abandoned.claim_id) }, deadline(60_000));
  const stalled = await itemOf(id);
  expect(stalled.stalled_claim).toBe(stalled.claim_id);
  return { id: String(id), ttlS, ttlMs: ttlS * 1000 };
}

describe('review35 F1: erase keeps a stalled call in its record’s last seconds as one “nothing will move but a resend with its key or erase with the app’s tables” (`nextChangeAtMs` calls `stalledChangesAtMs` without now) — while its poll, since review 34 F2, says no resend fits and it changes a second past its TTL, when erase would delete it as expired: the erase report gives no `retryAfter` for a call that goes by itself within seconds', () => {
  it('a call given up at its last look, erased (without the app’s tables) 5 s before its TTL: kept stalled with no change time; its poll at the same instant waits to a second past the TTL', async () => {
    const { tool } = noteTool(
      `erase_${Math.random().toString(36).slice(2, 10)}`,
      async (args) => {
        throttleNextRecordUpdate(world); // the worker dies before its store
        return { receipt: { note_id: `note_${Math.random()}`, text: args.text }, replayed: false };
      },
      { ttlSeconds: 3_600 },
    );
    const caller = identity();
    const s = await stalledAtLastLook(tool, caller, 's');
    const nowMs = s.ttlMs - 5_000;
    clockAt(nowMs);
    const read = await poll(caller, tool.name, 's');
    const task = await readTask(runtime, tool, caller, 's');
    const report = await eraseTenant(
      world.client,
      { tenant: caller.tenant, dryRun: true },
      { IDEMPOTENCY_TABLE: world.idempotencyTable.tableName },
    );
    const erased = await eraseItem(world.idempotencyTable, await itemOf(s.id));
    const kept = erased.kept;
    const values = `at TTL − 5 s: poll ${read.status} retry_after_ms ${read.retry_after_ms} (to TTL + ${(nowMs + (read.retry_after_ms ?? 0) - s.ttlMs) / 1000} s); task pollInterval ${task && 'pollIntervalMs' in task ? task.pollIntervalMs : '-'} ms; erase ${erased.outcome}, kept ${kept?.state}, changesAtMs ${kept?.changesAtMs === undefined ? 'undefined' : `TTL + ${(kept.changesAtMs - s.ttlMs) / 1000} s`}; the tenant's erase report (dry run): complete ${report.complete}, retryAfter ${report.retryAfter ?? 'none'}`;
    expect({ changesAtMs: kept?.changesAtMs, values }).toEqual({ changesAtMs: expiredFromMs(s.ttlS), values });
  });
});

describe('review35 F2: a stalled call’s poll in its record’s last seconds (from the TTL − 10 s: no resend fits, review 34 F2) words what calling again past its TTL does from the record’s state alone, not from the key it runs under — `operationOf` carries no `runs_anew`, its `hint` says a resend “cannot act twice”, and its `next` (`nextAfterOperation`: any stalled call with a wait is a Powertools one) says it “can act twice: first check” — while the resend at the same instant is told by the downstream key (`takeOverOnce`): `runs_anew` for a window call whose record fixed another call’s key, “it will not run twice” for any other. One poll answer contradicts itself, and one of its two words contradicts the resend’s', () => {
  async function stalledInLastSeconds(windowed: boolean) {
    const keys: string[] = [];
    const { tool } = noteTool(
      `${windowed ? 'window' : 'plain'}_${Math.random().toString(36).slice(2, 10)}`,
      async (args, context) => {
        keys.push(context.downstreamKey);
        throttleNextRecordUpdate(world); // the worker dies before its store
        return { receipt: { note_id: `note_${keys.length}`, text: args.text }, replayed: false };
      },
      windowed ? { ttlSeconds: 3_600, dedupeWindowSeconds: 600 } : { ttlSeconds: 3_600 },
    );
    const caller = identity();
    const t0 = Date.now();
    clockAt(t0);
    await runtime.invoke(tool, caller, { idempotency_key: 'a', text: 'x' }, deadline());
    clockAt(t0 + 20_000);
    await runtime.invoke(tool, caller, { idempotency_key: 'b', text: 'x' }, deadline());
    const ids = await recordIdsOf(world, caller.tenant);
    const records = await Promise.all(ids.map((id) => itemOf(id)));
    const b = records.find((item) => Number(item.created_at) === t0 + 20_000)!;
    // A window call B ran under A's key, fixed on its record; a plain one under its own, derived.
    expect(b.downstream_key !== undefined).toBe(windowed);
    const ttlS = Number(b.expiration);
    const ttlMs = ttlS * 1000;
    // The completer gives B up at its last look (its re-run's lock would end past it).
    clockAt(lastLookMs(ttlS));
    await completerFor([tool]).onRecheck({ key: String(b.id), claim: String(b.claim_id) }, deadline(60_000));
    const stalled = await itemOf(b.id);
    expect(stalled.stalled_claim).toBe(stalled.claim_id);
    clockAt(ttlMs - 5_000);
    const read = (await poll(caller, tool.name, 'b')) as Awaited<ReturnType<typeof poll>> & { runs_anew?: boolean };
    const next = nextAfterRead(read as never).message;
    const resent = (await runtime.invoke(
      tool,
      caller,
      { idempotency_key: 'b', text: 'x' },
      deadline(RESEND_INVOCATION_MS),
    )) as { ok: boolean; status?: string; retry_after_ms?: number; runs_anew?: boolean };
    const resentNext = nextAfterWrite(tool.name, resent as never).message;
    const actsTwice = (text: string | undefined) =>
      /cannot act twice|will not run twice/.test(text ?? '')
        ? 'once'
        : /can act twice/.test(text ?? '')
          ? 'twice'
          : '?';
    const said = { hint: actsTwice(read.hint), next: actsTwice(next), resend: actsTwice(resentNext) };
    const values = `${windowed ? 'window call, key fixed on its record' : 'plain call'}, stalled (${stalled.stalled_reason}) at TTL − 5 s: poll ${read.status} retry_after_ms ${read.retry_after_ms}, runs_anew ${read.runs_anew}, hint says ${said.hint}, next says ${said.next} (“${next.slice(0, 60)}…”); resend ${resent.status} ${resent.retry_after_ms} ms, runs_anew ${resent.runs_anew}, its next says ${said.resend}`;
    return { said, runsAnew: { poll: read.runs_anew === true, resend: resent.runs_anew === true }, values };
  }

  it('window call B runs under A’s key and dies, given up at its last look; 5 s before its TTL the poll’s hint says it cannot act twice, its next and the resend that it can', async () => {
    const { said, runsAnew, values } = await stalledInLastSeconds(true);
    expect({ said, runsAnew, values }).toEqual({
      said: { hint: said.resend, next: said.resend, resend: said.resend },
      runsAnew: { poll: runsAnew.resend, resend: runsAnew.resend },
      values,
    });
  });

  it('plain call B dies, given up at its last look; 5 s before its TTL the poll’s next says it can act twice (check first), the resend that it will not run twice', async () => {
    const { said, runsAnew, values } = await stalledInLastSeconds(false);
    expect({ said, runsAnew, values }).toEqual({
      said: { hint: said.resend, next: said.resend, resend: said.resend },
      runsAnew: { poll: runsAnew.resend, resend: runsAnew.resend },
      values,
    });
  });
});

describe('review35 F3: a tenant’s erase that keeps a completed record it cannot attribute (a Powertools handler’s: it may hold the tenant’s result) says to erase again at that record’s TTL itself (`unattributedItem`: `untilMs` the TTL) — not a second past it, the first instant every reader counts it expired (`expiredFromMs`, review 33 F4’s rule for every wait to a TTL): the erase run at the `retryAfter` it gave finds the record still completed, is again not complete, and is told to erase again now', () => {
  it('a Powertools record completed under no tenant, TTL T: erased at T − 30 s, retryAfter is T; erased again at T, still not complete', async () => {
    const tenant = identity().tenant;
    const nowMs = Date.now();
    const ttlS = Math.floor(nowMs / 1000) + 120;
    await world.client.send(
      new PutItemCommand({
        TableName: world.idempotencyTable.tableName,
        Item: {
          id: { S: `send_email#${Math.random().toString(36).slice(2, 12)}` },
          status: { S: 'COMPLETED' },
          expiration: { N: String(ttlS) },
          validation: { S: 'v' },
          data: { S: '{"message_id":"m1"}' },
        },
      }),
    );
    const env = { IDEMPOTENCY_TABLE: world.idempotencyTable.tableName };
    clockAt(ttlS * 1000 - 30_000);
    const first = await eraseTenant(world.client, { tenant }, env);
    const againMs = first.retryAfter === undefined ? Number.NaN : Date.parse(first.retryAfter);
    clockAt(againMs);
    const second = await eraseTenant(world.client, { tenant }, env);
    const at = (ms: number) =>
      ms >= ttlS * 1000 ? `TTL + ${(ms - ttlS * 1000) / 1000} s` : `TTL − ${(ttlS * 1000 - ms) / 1000} s`;
    const values = `at TTL − 30 s: complete ${first.complete}, unattributed completed ${first.unattributed.completed}, retryAfter ${first.retryAfter === undefined ? '-' : at(againMs)}; erased again then: complete ${second.complete}, unattributed completed ${second.unattributed.completed}, retryAfter ${second.retryAfter === undefined ? '-' : at(Date.parse(second.retryAfter))}`;
    // Rule 8's "a wait to the TTL ends a second past it": the erase asked again when told is complete.
    expect({ completeWhenToldToComeBack: second.complete, values }).toEqual({
      completeWhenToldToComeBack: true,
      values,
    });
  });
});

describe('review35 F4: a provider’s wait (InFlightError) met past the last look by an attempt not given up in advance (a holder run past its own lock, review 34 F3’s path) is parked to the last look — already past: the lock ended as it is written — and answered `pending` in 100 ms (the floor); the caller’s resend then takes the call over, gives it up in advance and runs the tool again though the provider said it still runs the key for hours (review 32 F2 again, reached from review 34 F3’s fix) — while the same wait met by an attempt given up in advance is kept to the TTL − 10 s', () => {
  it('a resend 15 s before the last look with a 10 s lock runs 16 s; the provider says “ask in 10 h”: pending 100 ms; the resend 100 ms later runs the tool again', async () => {
    let slowInFlight = false;
    const { tool, execute } = noteTool(
      `late_${Math.random().toString(36).slice(2, 10)}`,
      async (args) => {
        if (slowInFlight) {
          slowInFlight = false;
          // The tool's provider call outlasts the invocation's lock (a host that does not stop it).
          clockAt(Date.now() + 16_000);
          throw new InFlightError('the provider still runs this key', 10 * 3_600_000);
        }
        if (execute.mock.calls.length > 2) throw new InFlightError('the provider still runs this key', 10 * 3_600_000);
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
    const answeredMs = Date.now();
    const parked = await itemOf(key);
    const runsBefore = execute.mock.calls.length;
    // The caller asks again when told.
    clockAt(answeredMs + (answer.retry_after_ms ?? 0));
    const again = (await runtime.invoke(
      tool,
      caller,
      { idempotency_key: 'l', text: 'x' },
      deadline(RESEND_INVOCATION_MS),
    )) as { status?: string; retry_after_ms?: number };
    const after = await itemOf(key);
    const values = `provider's 10 h wait met at last look + ${(answeredMs - lastLook) / 1000} s by an attempt not given up: pending ${answer.retry_after_ms} ms, lock to last look + ${(Number(parked.in_progress_expiration) - lastLook) / 1000} s (given up in advance: ${parked.stalled_claim !== undefined && parked.stalled_claim === parked.claim_id}); resend then: ${again.status} ${again.retry_after_ms} ms, attempt ${parked.attempt} → ${after.attempt}, tool runs ${runsBefore} → ${execute.mock.calls.length}, lock then to TTL − ${(ttlMs - Number(after.in_progress_expiration)) / 1000} s`;
    // As review 32 F2: the provider's wait kept (pending until the call is given up, or its last lock end), not re-run at once.
    expect({ reRun: execute.mock.calls.length > runsBefore, values }).toEqual({ reRun: false, values });
  });
});
