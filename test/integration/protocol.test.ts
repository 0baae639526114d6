// Rule 1 (docs/state-machine.md): a record whose effect may have happened is never deleted.
// Rule 2 (docs/state-machine.md): every takeover names the claim it replaces; every lock ends 10 s before its record’s TTL.
// Rule 3 (docs/state-machine.md): an intent’s downstream key is fixed once.
// Rule 6 (docs/state-machine.md): erase is final and keeps what is in flight.
import { randomUUID } from 'node:crypto';
import { ResourceNotFoundException, UpdateItemCommand } from '@aws-sdk/client-dynamodb';
import { classify } from '../../lib/idempotency/call-state';
import { claim, fixKeyInput, takeOver } from '../../lib/idempotency/protocol/claim-writes';
import { markStalled } from '../../lib/idempotency/protocol/completer';
import { closeStalled, deleteExpired, tombstone } from '../../lib/idempotency/protocol/erase';
import { type Intent, type IntentHolder, intentOf } from '../../lib/idempotency/protocol/intent-record';
import {
  createIntent,
  deleteIntent,
  type NewIntent,
  releaseIntent,
  replaceIntent,
  swapIntent,
  takeOverIntent,
} from '../../lib/idempotency/protocol/intent-writes';
import { DEFAULT_RECORD_ATTRIBUTES } from '../../lib/idempotency/protocol/record';
import { park } from '../../lib/idempotency/protocol/settle';
import { conditionally, type IdempotencyTable, readCallRecord } from '../../lib/idempotency/protocol/table';
import { createProtocolWorld, type ProtocolWorld } from '../helpers/protocol-world';
import { recordTransitions, TTL_SECONDS } from '../helpers/record-transitions';

/**
 * Each transition of docs/state-machine.md on DynamoDB Local: what it answers (a tagged result, never a
 * thrown condition failure) and what the table holds after it — a refused write writes nothing.
 */
let world: ProtocolWorld;
let table: IdempotencyTable;
beforeAll(() => {
  world = createProtocolWorld();
  table = world.idempotencyTable;
});
afterAll(() => world.destroy());

const { firstClaim, itemOf, claimed } = recordTransitions(() => table);

describe('a call record’s transitions', () => {
  it('claim: claims an absent record, and answers a refusal with the record in the way, unchanged', async () => {
    const first = firstClaim();

    const won = await claim(table, first, Date.now());
    const before = await itemOf(first.recordKey);
    const lost = await claim(table, { ...first, validation: 'v2' }, Date.now());

    expect(won).toMatchObject({ kind: 'claimed', claim: { recordKey: first.recordKey, attempt: 1 } });
    const claimId = won.kind === 'claimed' ? won.claim.claimId : '';
    // The call's id: its record key and an instance of its own — never the claim's id, which is never shown.
    const callId = won.kind === 'claimed' ? won.claim.callId : '';
    expect(callId).toMatch(new RegExp(`^${first.recordKey.replace(/[#+/=]/g, '\\$&')}@[0-9a-f-]{36}$`));
    expect(callId).not.toContain(claimId);
    expect(lost).toEqual({
      kind: 'refused',
      existing: expect.objectContaining({
        recordKey: first.recordKey,
        claimId,
        callId,
        status: 'INPROGRESS',
        validation: 'v1',
      }),
    });
    expect(await itemOf(first.recordKey)).toEqual(before);
  });

  it('claim: claims a record whose TTL passed anew (a new call instance)', async () => {
    const first = firstClaim();
    const old = await claimed(first);

    const past = Date.now() + (TTL_SECONDS + 60) * 1000;
    const again = await claim(table, { ...first, expiresAtS: Math.round(past / 1000) + TTL_SECONDS }, past);

    expect(again).toMatchObject({ kind: 'claimed', claim: { attempt: 1 } });
    expect(again.kind === 'claimed' && again.claim.callId).not.toBe(old.callId);
  });

  it('take over: refuses a live lock, other arguments and another claim; takes the abandoned claim it names', async () => {
    const first = firstClaim(1_000);
    const held = await claimed(first);
    const ended = first.lockEndsMs + 1;
    const from = {
      recordKey: first.recordKey,
      fromClaimId: held.claimId,
      validation: 'v1',
      lockEndsMs: ended + 5_000,
      ttlSeconds: TTL_SECONDS,
    };
    const before = await itemOf(first.recordKey);

    const whileLive = await takeOver(table, from, first.lockEndsMs - 1);
    const otherArguments = await takeOver(table, { ...from, validation: 'v2' }, ended);
    const otherClaim = await takeOver(table, { ...from, fromClaimId: randomUUID() }, ended);
    const afterRefusals = await itemOf(first.recordKey);
    const taken = await takeOver(table, from, ended);

    for (const refused of [whileLive, otherArguments, otherClaim]) {
      expect(refused).toEqual({ kind: 'refused', existing: expect.objectContaining({ claimId: held.claimId }) });
    }
    expect(afterRefusals).toEqual(before);
    expect(taken).toMatchObject({
      kind: 'claimed',
      claim: {
        recordKey: first.recordKey,
        attempt: 2,
        callId: held.callId,
        // When the first claim was written (its created_at), however late the takeover runs.
        askedAtMs: held.askedAtMs,
      },
    });
  });

  it('take over: refuses a lock that would outlive the record’s TTL', async () => {
    const first = firstClaim(1_000);
    const held = await claimed(first);

    const beyond = await takeOver(
      table,
      {
        recordKey: first.recordKey,
        fromClaimId: held.claimId,
        validation: 'v1',
        lockEndsMs: first.expiresAtS * 1000 + 1_000,
        ttlSeconds: TTL_SECONDS,
      },
      first.lockEndsMs + 1,
    );

    expect(beyond).toMatchObject({ kind: 'refused', existing: { claimId: held.claimId } });
  });

  it('fix the downstream key: on its own claim, and a takeover keeps it', async () => {
    const first = firstClaim();
    const own = await claimed(first);

    const fixed = await conditionally(table.client, new UpdateItemCommand(fixKeyInput(table, own, 'rs1_intents_key')));

    expect(fixed.passed).toBe(true);
    expect((await readCallRecord(table, first.recordKey))?.downstreamKey).toBe('rs1_intents_key');
    const taken = await takeOver(
      table,
      {
        recordKey: first.recordKey,
        fromClaimId: own.claimId,
        validation: 'v1',
        lockEndsMs: Date.now() + 10_000,
        ttlSeconds: TTL_SECONDS,
      },
      first.lockEndsMs + 1,
    );
    expect(taken).toMatchObject({ kind: 'claimed', claim: { downstreamKey: 'rs1_intents_key', attempt: 2 } });
  });

  it('mark stalled: only an abandoned record, on the claim read', async () => {
    const first = firstClaim(1_000);
    const held = await claimed(first);

    const whileLive = await markStalled(table, first.recordKey, held.claimId, first.lockEndsMs - 1, 'attempts');
    const otherClaim = await markStalled(table, first.recordKey, randomUUID(), first.lockEndsMs + 1, 'attempts');
    const abandoned = await markStalled(table, first.recordKey, held.claimId, first.lockEndsMs + 1, 'attempts');

    expect([whileLive, otherClaim, abandoned]).toEqual(['changed', 'changed', 'stalled']);
    expect(await readCallRecord(table, first.recordKey)).toMatchObject({ stalledClaimId: held.claimId });
  });

  it('tombstone, close stalled and delete expired: each only from its own state', async () => {
    const first = firstClaim(1_000);
    const held = await claimed(first);
    const before = await itemOf(first.recordKey);

    const refused = [
      await tombstone(table, first.recordKey), // in flight, not completed
      await closeStalled(table, first.recordKey, held.claimId, Date.now()), // not stalled
      await deleteExpired(table, first.recordKey, Date.now()), // not expired
    ];
    const afterRefusals = await itemOf(first.recordKey);
    await markStalled(table, first.recordKey, held.claimId, first.lockEndsMs + 1, 'attempts');
    const closed = await closeStalled(table, first.recordKey, held.claimId, first.lockEndsMs + 1);
    const expired = await deleteExpired(table, first.recordKey, (first.expiresAtS + 1) * 1000);

    expect(refused).toEqual(['changed', 'changed', 'changed']);
    expect(afterRefusals).toEqual(before);
    expect(closed).toBe('erased');
    expect(expired).toBe('deleted');
    expect(await itemOf(first.recordKey)).toBeUndefined();
  });

  it('close stalled: never a call whose lock is live again (its attempt, still running past its lock, parked itself)', async () => {
    const first = firstClaim(1_000);
    const held = await claimed(first);
    await markStalled(table, first.recordKey, held.claimId, first.lockEndsMs + 1, 'attempts');
    // The attempt given up on was still running (a slow effect past its lock): it parks its own claim.
    await park(table, held, Date.now() + 60_000);
    const before = await itemOf(first.recordKey);

    const closed = await closeStalled(table, first.recordKey, held.claimId, Date.now());

    expect(closed).toBe('changed');
    expect(await itemOf(first.recordKey)).toEqual(before);
    expect(classify(await readCallRecord(table, first.recordKey), Date.now())).toBe('live');
  });

  it('passes every failure other than a failed condition on as it is', async () => {
    const missing = { ...table, tableName: `no-such-table-${randomUUID()}` };

    await expect(claim(missing, firstClaim(), Date.now())).rejects.toBeInstanceOf(ResourceNotFoundException);
  });
});

describe('an intent’s transitions', () => {
  function newIntent(): NewIntent {
    const recordKey = `proto#${randomUUID()}`;
    return {
      intentKey: `proto#intent#${randomUUID()}`,
      tenant: `t-${randomUUID()}`,
      tool: 'proto',
      holder: { recordKey, claimId: randomUUID(), callId: `${recordKey}@${randomUUID()}` },
      downstreamKey: 'rs1_first',
      windowEndsAtS: Math.floor(Date.now() / 1000) + 60,
      expiresAtS: Math.floor(Date.now() / 1000) + 60 + TTL_SECONDS,
    };
  }
  const other = () => {
    const recordKey = `proto#${randomUUID()}`;
    return { recordKey, claimId: randomUUID(), callId: `${recordKey}@${randomUUID()}` };
  };

  it('create: creates a free intent, and answers a held one with the intent as read', async () => {
    const intent = newIntent();

    const created = await createIntent(table, intent);
    const again = await createIntent(table, { ...intent, holder: other(), downstreamKey: 'rs1_second' });

    expect(created).toEqual({ kind: 'created' });
    expect(again).toEqual({
      kind: 'held',
      held: {
        intentKey: intent.intentKey,
        holder: intent.holder,
        downstreamKey: 'rs1_first',
        windowEndsAtS: intent.windowEndsAtS,
        replaced: undefined,
        runners: [intent.holder.callId],
        runnersKnown: true,
        expiresAtS: intent.expiresAtS,
      },
    });
  });

  it('replace, swap, release and delete: refused (changed) unless the intent is held as read, and then nothing is written', async () => {
    const intent = newIntent();
    await createIntent(table, intent);
    const stale = other();
    const before = await itemOf(intent.intentKey);
    const readAs = (holder: IntentHolder): Intent => ({
      intentKey: intent.intentKey,
      holder,
      downstreamKey: intent.downstreamKey,
      windowEndsAtS: intent.windowEndsAtS,
      replaced: undefined,
      runners: [holder.callId],
      runnersKnown: true,
      expiresAtS: intent.expiresAtS,
    });

    const refused = [
      await replaceIntent(table, { ...intent, holder: other() }, readAs(stale)),
      await swapIntent(table, readAs(stale), other()),
      await releaseIntent(table, intent.intentKey, stale),
      await deleteIntent(table, readAs(stale)),
    ];

    expect(refused).toEqual(['changed', 'changed', 'changed', 'changed']);
    expect(await itemOf(intent.intentKey)).toEqual(before);
  });

  it('release is refused once another call is among the runners (review 12, R12-2): only a sole runner frees an intent', async () => {
    const intent = newIntent();
    await createIntent(table, intent);
    const taker = other();
    const read = async () => intentOf((await itemOf(intent.intentKey))!, DEFAULT_RECORD_ATTRIBUTES)!;
    expect(await takeOverIntent(table, await read(), taker)).toBe('claim_lost'); // the taker's record does not exist here: nothing written
    expect(await swapIntent(table, await read(), taker)).toBe('swapped'); // a runner now
    expect(await swapIntent(table, await read(), intent.holder)).toBe('swapped'); // taken back

    expect(await releaseIntent(table, intent.intentKey, intent.holder)).toBe('changed');
    expect(await itemOf(intent.intentKey)).toMatchObject({
      intent_runners: new Set([intent.holder.callId, taker.callId]),
    });
  });

  it('swap moves the holder, its key kept, both calls among the runners; release frees it for its creator alone (a marker: no holder, key, window or runners)', async () => {
    const intent = newIntent();
    await createIntent(table, intent);
    const next = other();

    const read = intentOf((await itemOf(intent.intentKey))!, DEFAULT_RECORD_ATTRIBUTES)!;
    const swapped = await swapIntent(table, read, next);
    const held = await createIntent(table, intent);
    const releasedByTaker = await releaseIntent(table, intent.intentKey, next);
    const fresh = newIntent();
    await createIntent(table, fresh);
    const released = await releaseIntent(table, fresh.intentKey, fresh.holder);

    expect(swapped).toBe('swapped');
    expect(held).toMatchObject({
      kind: 'held',
      held: { holder: next, downstreamKey: intent.downstreamKey, runners: [intent.holder.callId, next.callId].sort() },
    });
    expect(releasedByTaker).toBe('changed');
    expect(released).toBe('released');
    expect(await itemOf(fresh.intentKey)).toEqual({
      id: fresh.intentKey,
      tenant: fresh.tenant,
      tool: fresh.tool,
      expiration: fresh.expiresAtS,
    });
  });
});
