// Rule 8 (docs/state-machine.md): every call ends, in a time its answers state.
/**
 * Review 37 of 66411d0 (the first claim's kept key: `claim`, `claimKeeping`, `claimWrite` in
 * protocol/claim-writes.ts). Each `describe` holds one finding; its test fails on 66411d0 for the reason its
 * title states. F1 (safety, wrong receipt): a kept key with ranBefore false is handed to the intent as the key
 * of a call asked now — over its own ended window it opens a new window under the old window's key, and that
 * window's calls are answered the old window's effect. F2 (liveness/wording): DynamoDB's sweep deleting the
 * expired record between `claim`'s two PutItems makes the resend fail `internal` ("not a call record a claim
 * wrote") instead of claiming the free key. Looked at and not found wanting: two resends racing (one
 * `claimKeeping` wins, the other attaches); different arguments past the TTL (the first PutItem passes: a
 * fresh call under its own key); a tombstone or a Powertools record (no `downstream_key`: the first PutItem
 * passes); a completed record (never kept); a kept key with ranBefore true (runs under it without the intent;
 * a call queued on the old holder's call id, or asked in the old window, still finds that window's key through
 * `takeFromAnother` / `fromPastWindow`); a new window held back by the stalled old call (replaced at its TTL
 * under its creator's own key, the resend under the old key: one effect each); the completer's rechecks and
 * give-ups on the old claim (refused: the claim changed); the hand-off path; erase's `deleteExpired` racing the
 * second PutItem (its condition, `#expiry < :now`, fails over the new claim; the other order is F2); a resend
 * over an erased tenant's intent (the kept call is a live record erase keeps). The explorer sees only writes that
 * succeeded (the refused first PutItem is not recorded; the second is read as a claim anew) — but none of its
 * scenarios has a dedupe window, so `claimKeeping` is never reached there.
 * Both fixed at their rules: a key is kept only when an earlier attempt ran under it (`neverRan`: else the
 * record is claimed over as any first claim, 4ae44d5); a claim refused with no item in its way claims again
 * (`Claimed.gone`: the record went away between a read and the write).
 */
import { DeleteItemCommand } from '@aws-sdk/client-dynamodb';
import { REFUSED } from '../../lib/idempotency/answers';
import { callRecords } from '../helpers/call-records';
import { livenessWorld } from '../helpers/liveness-world';
import { intentItemIdsOf, landThenFailNextIntentWrite, recordIdsOf } from '../helpers/no-effect';
import { deadline, identity } from '../helpers/protocol-world';

const w = livenessWorld('review37');

type Answer = { ok: boolean; status?: string; idempotent?: boolean };
const noteOf = (answer: Answer) =>
  (answer as unknown as { result?: { note_id?: string } }).result?.note_id ??
  (answer as unknown as { receipt?: { note_id?: string } }).receipt?.note_id;

const { dedupingNotes } = w;

describe('review37 F1: a call claimed anew keeping a key it never ran under (`claimKeeping`, ranBefore false) asks the intent as a call asked NOW (`askedAtMs`: the new claim’s time, not its window’s) with the kept key as the key of any intent it creates — so over its own ended window W1 it replaces the intent (`replaceEnded`) and opens a NEW window W2 under W1’s downstream key: W2’s calls with any other client key are answered W1’s effect (a wrong receipt, no effect of their own), where without that resend W2’s first call makes W2’s effect', () => {
  it('A makes W1’s effect and dies; B takes A’s intent over (key fixed, the transaction’s answer lost: parked unrun); past both TTLs B is resent, then D (fresh key, same arguments) is asked in the window B’s resend opened', async () => {
    const { tool, runs, mode } = dedupingNotes({ ttlSeconds: 3_600, dedupeWindowSeconds: 600 });
    const caller = identity();
    const t0 = Date.now();
    w.clockAt(t0);
    mode.die = true;
    await w.runtime.invoke(tool, caller, { idempotency_key: 'a', text: 'x' }, deadline());
    mode.die = false;
    expect(runs).toHaveLength(1); // A made W1's effect (note_1) under its own key, and died before its store
    const w1Key = runs[0];
    w.clockAt(t0 + 20_000); // A's lock ended: abandoned, inside W1
    landThenFailNextIntentWrite(w.world, 'TransactWriteItemsCommand');
    const b = (await w.runtime.invoke(tool, caller, { idempotency_key: 'b', text: 'x' }, deadline())) as Answer;
    expect(runs).toHaveLength(1); // B never ran
    const ids = await recordIdsOf(w.world, caller.tenant);
    const items = await Promise.all(ids.map((id) => w.itemOf(id)));
    const bItem = items.find((item) => item.downstream_key !== undefined);
    expect(bItem?.downstream_key).toBe(w1Key); // B's record fixed W1's key (the intent's takeover landed)
    expect(bItem?.unrun_attempts).toBe(1); // and was parked unrun: its answer was lost
    // Past A's and B's TTLs (t0 + 3620 s): B's caller resends.
    w.clockAt(t0 + 3_700_000);
    const resent = (await w.runtime.invoke(tool, caller, { idempotency_key: 'b', text: 'x' }, deadline())) as Answer;
    const [intentId] = await intentItemIdsOf(w.world, caller.tenant);
    const intent = intentId ? await callRecords(w.world, w.runtime).itemOf(intentId) : {};
    const w2OpenedUnder = intent.window_end !== undefined && Number(intent.window_end) > (t0 + 3_700_000) / 1000;
    // D, a fresh key with the same arguments, 10 s later: inside the window B's resend opened.
    w.clockAt(t0 + 3_710_000);
    const d = (await w.runtime.invoke(tool, caller, { idempotency_key: 'd', text: 'x' }, deadline())) as Answer;
    const under = (key: string | undefined) =>
      key === undefined ? '-' : key === w1Key ? "W1's (A's) key" : 'another key';
    const values = `B: ${b.ok ? 'ok' : (b.status ?? 'failed')}; B resent past its TTL: ${noteOf(resent)} (idempotent ${resent.idempotent}), ran under ${under(runs[1])}; the intent after it: window_end ${w2OpenedUnder ? 'a new window (W2)' : String(intent.window_end)}, its key ${under(String(intent.downstream_key))}; D in W2: ${noteOf(d)} (idempotent ${d.idempotent}); the tool ran ${runs.length} times, D's run under ${under(runs[2])}`;
    expect({ dNote: noteOf(d), w2Key: under(String(intent.downstream_key)), values }).toEqual({
      dNote: 'note_2',
      w2Key: 'another key',
      values,
    });
  });
});

/**
 * DynamoDB's TTL sweep deletes `recordKey`'s item right after the next first claim on it is refused (between
 * `claim`'s first PutItem and `claimKeeping`'s): an expired item may be swept at any instant.
 */
function sweepAfterNextRefusedClaim(recordKey: string): void {
  const name = `sweep-after-claim-${Math.random().toString(36).slice(2)}`;
  const { client, idempotencyTable } = w.world;
  client.middlewareStack.add(
    (next, context) => async (args) => {
      const input = args.input as { ConditionExpression?: string; Item?: { id?: { S?: string } } };
      const firstClaim =
        context.commandName === 'PutItemCommand' &&
        input.Item?.id?.S === recordKey &&
        input.ConditionExpression?.startsWith('attribute_not_exists(#id) OR') === true;
      if (!firstClaim) return next(args);
      client.middlewareStack.remove(name);
      try {
        return await next(args);
      } catch (error) {
        await client.send(
          new DeleteItemCommand({ TableName: idempotencyTable.tableName, Key: { id: { S: recordKey } } }),
        );
        throw error;
      }
    },
    { step: 'initialize', name },
  );
}

describe('review37 F2: the second write of a resend past the TTL (`claimKeeping`, on the old record’s claim) is refused with no item when DynamoDB’s sweep deleted the expired record between the two PutItems, and `claimOnce` reads a refusal with no item as an item no claim wrote — the resend fails `internal` (“the item under … is not a call record a claim wrote”), a false statement about an absent record, instead of claiming the free key again (`gone_meanwhile`), as every other write that finds the record gone does', () => {
  it('A dies after its effect; B takes A’s window over, runs under A’s key and dies; past both TTLs B is resent while the sweep deletes its record', async () => {
    const { tool, runs, mode } = dedupingNotes({ ttlSeconds: 3_600, dedupeWindowSeconds: 600 });
    const caller = identity();
    const t0 = Date.now();
    w.clockAt(t0);
    mode.die = true;
    await w.runtime.invoke(tool, caller, { idempotency_key: 'a', text: 'x' }, deadline());
    w.clockAt(t0 + 20_000); // A's lock ended: abandoned, inside W1
    await w.runtime.invoke(tool, caller, { idempotency_key: 'b', text: 'x' }, deadline());
    mode.die = false;
    expect(runs).toEqual([runs[0], runs[0]]); // B ran under A's key (taken over) and died
    const ids = await recordIdsOf(w.world, caller.tenant);
    const bKey = (await Promise.all(ids.map((id) => w.itemOf(id)))).find(
      (item) => item.downstream_key !== undefined,
    )?.id;
    expect(bKey).toBeDefined();
    w.clockAt(t0 + 3_700_000); // past A's and B's TTLs (t0 + 3620 s)
    sweepAfterNextRefusedClaim(String(bKey));
    const notACallRecord = jest.spyOn(REFUSED, 'notACallRecord');
    const resent = (await w.runtime.invoke(tool, caller, { idempotency_key: 'b', text: 'x' }, deadline())) as Answer & {
      error?: { code?: string; message?: string };
    };
    const after = await w.itemOf(String(bKey));
    const values = `B resent past its TTL, its record swept between the two PutItems: ${resent.ok ? `ok ${noteOf(resent)}` : `${resent.status ?? 'failed'} ${resent.error?.code ?? ''}: ${resent.error?.message ?? JSON.stringify(resent)}`}; the tool ran ${runs.length - 2} more time(s); the record after: ${after.status ?? 'none'}; REFUSED.notACallRecord answered it: ${notACallRecord.mock.calls.length} time(s)`;
    expect({ ok: resent.ok, values }).toEqual({ ok: true, values });
  });
});
