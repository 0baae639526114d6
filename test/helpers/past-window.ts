/**
 * What the suites of a dedupe window's replaced windows share (test/integration/intent-past-window.test.ts,
 * intent-review17.test.ts, intent-review18.test.ts): a window tool idempotent by its downstream key, its calls,
 * a window with a call that never reached its intent (a straggler), and what driving `claimIntent` directly
 * takes (holders, requests with an exact `askedAtMs`, the intent's item).
 */
import { randomUUID } from 'node:crypto';
import { GetItemCommand } from '@aws-sdk/client-dynamodb';
import { unmarshall } from '@aws-sdk/util-dynamodb';
import { NotFoundError } from '../../lib/idempotency/errors';
import { type Claim, claim } from '../../lib/idempotency/protocol/claim-writes';
import { claimIntent, type IntentClaim, type IntentRequest, intentKeyOf } from '../../lib/idempotency/protocol/intent';
import type { IntentHolder } from '../../lib/idempotency/protocol/intent-record';
import { releaseIntent } from '../../lib/idempotency/protocol/intent-writes';
import type { ToolRuntime } from '../../lib/idempotency/runtime';
import { callRecords } from './call-records';
import { movableClock } from './clock';
import { intentIdsOf, recordIdsOf, throttleNextIntentWrite, throttleNextRecordUpdate } from './no-effect';
import { deadline, identity, type ProtocolWorld } from './protocol-world';
import { noteTool } from './tools';

/** Past a 600 s window. */
export const PAST_THE_WINDOW_MS = 11 * 60_000;

/** A call's arguments: the same text under `key`. */
export const sameArgs = (key: string) => ({ idempotency_key: key, text: 'same' });

/** An answer's receipt. */
export const receiptOf = (answer: unknown) => (answer as { receipt: unknown }).receipt;

/**
 * A dedupe-window tool (600 s) idempotent by its downstream key (a run under a key that made the effect finds
 * it). `customerExists` false: `not_found`, a business error that makes no effect. `storeFailsAfterNextRun`:
 * its next run commits (or finds) the effect, then the record's store is throttled — the effect ran, the call
 * stays in flight, and a later attempt finishes it.
 */
export function keyedWindowTool(world: ProtocolWorld, runtime: ToolRuntime, prefix: string) {
  const state = { customerExists: true, storeFailsAfterNextRun: false };
  const effects = new Map<string, string>();
  const { tool } = noteTool(
    `${prefix}_${randomUUID().slice(0, 8)}`,
    async (a, context) => {
      if (state.storeFailsAfterNextRun) {
        state.storeFailsAfterNextRun = false;
        throttleNextRecordUpdate(world);
      }
      const found = effects.get(context.downstreamKey);
      if (found) return { receipt: { note_id: found, text: a.text }, replayed: true };
      if (!state.customerExists) throw new NotFoundError('customer: no such customer');
      const noteId = `note_${randomUUID()}`;
      effects.set(context.downstreamKey, noteId);
      return { receipt: { note_id: noteId, text: a.text }, replayed: false };
    },
    { dedupeWindowSeconds: 600 },
  );
  const caller = identity();
  /** A call of the tool under `key`, the same arguments. */
  const call = (key: string) => runtime.invoke(tool, caller, sameArgs(key), deadline());
  return { tool, effects, state, caller, call };
}

/**
 * A commits its effect in its window; Q, a fresh key asked in it, fails before it reaches the intent (its
 * create throttled): its record, parked, names no intent.
 */
export async function windowWithAStraggler(world: ProtocolWorld, runtime: ToolRuntime, prefix: string) {
  const clock = movableClock();
  const t = keyedWindowTool(world, runtime, prefix);
  const a = await t.call('a');
  expect(a).toEqual(expect.objectContaining({ ok: true, idempotent: false }));
  const [aKey] = await recordIdsOf(world, t.caller.tenant);
  const [intentKey] = await intentIdsOf(world, t.caller.tenant);
  throttleNextIntentWrite(world, 'create');
  expect(await t.call('q')).toMatchObject({ ok: false });
  const qKey = (await recordIdsOf(world, t.caller.tenant)).find((id) => id !== aKey) ?? '';
  const itemOf = (key: string) => callRecords(world, runtime).itemOf(key);
  return { clock, t, aKey: aKey ?? '', qKey, intentKey: intentKey ?? '', receipt: receiptOf(a), itemOf };
}

// --- claimIntent driven directly, with exact `askedAtMs` ---

/** The records' TTL of the requests below (s). */
export const REQUEST_TTL_S = 3_600;

/** A holder whose call has no record (gone): an intent it holds is replaced, or answered, as a gone holder's. */
export function goneHolder(): IntentHolder {
  const recordKey = `note#${randomUUID()}`;
  return { recordKey, claimId: randomUUID(), callId: `${recordKey}@${randomUUID()}` };
}

/** A call's first claim of a record of its own, live. */
export async function liveCall(world: ProtocolWorld): Promise<Claim> {
  const now = Date.now();
  const result = await claim(
    world.idempotencyTable,
    {
      recordKey: `note#${randomUUID()}`,
      tenant: 't',
      tool: 'note',
      validation: 'v1',
      expiresAtS: Math.ceil(now / 1000) + REQUEST_TTL_S,
      lockEndsMs: now + 30_000,
      call: '{"args":{},"key":"k","user":"ada"}',
    },
    now,
  );
  if (result.kind !== 'claimed') throw new Error('the seed claim was refused');
  return result.claim;
}

/** The intent holder a claim makes. */
export const holderOfClaim = (c: Claim): IntentHolder => ({
  recordKey: c.recordKey,
  claimId: c.claimId,
  callId: c.callId,
});

/** `holder`'s request of the intent of `scope`, asked at `askedAtMs`, under its own key `dk-<claim id>`. */
export function requestOf(
  scope: IntentRequest['scope'],
  holder: IntentHolder,
  windowSeconds: number,
  askedAtMs: number,
): IntentRequest {
  return { scope, holder, downstreamKey: `dk-${holder.claimId}`, windowSeconds, ttlSeconds: REQUEST_TTL_S, askedAtMs };
}

/**
 * `scope`'s intent claimed directly, under a tool of `windowSeconds`: `holder`'s claim, asked at `askedAtMs`,
 * its tool's TTL `ttlSeconds` (a deploy's) — what `claimIntent` answers.
 */
export function claimerOf(world: ProtocolWorld, scope: IntentRequest['scope'], windowSeconds: number) {
  return (holder: IntentHolder, askedAtMs: number, ttlSeconds: number = REQUEST_TTL_S): Promise<IntentClaim> =>
    claimIntent(world.idempotencyTable, { ...requestOf(scope, holder, windowSeconds, askedAtMs), ttlSeconds });
}

/**
 * A call asked at `askedAtMs` that created `scope`'s intent and released it (its first run's business error:
 * nothing happened), leaving a marker that remembers the window that intent replaced, if any. Its holder.
 */
export async function releasedBy(
  world: ProtocolWorld,
  scope: IntentRequest['scope'],
  windowSeconds: number,
  askedAtMs: number,
): Promise<IntentHolder> {
  const holder = goneHolder();
  const created = await claimIntent(world.idempotencyTable, requestOf(scope, holder, windowSeconds, askedAtMs));
  if (created.kind !== 'holds' || !created.created) throw new Error(`the intent was not created: ${created.kind}`);
  if ((await releaseIntent(world.idempotencyTable, intentKeyOf(scope), holder)) !== 'released') {
    throw new Error('the intent was not released');
  }
  return holder;
}

/** A fresh intent scope: a new caller's `note` with its own fingerprint. */
export const newScope = (): IntentRequest['scope'] => ({
  tool: 'note',
  identity: identity(),
  fingerprint: `fp-${randomUUID()}`,
});

/** The item under `scope`'s intent key, unmarshalled ({} when none). */
export async function intentItemOf(world: ProtocolWorld, scope: IntentRequest['scope']) {
  const { Item } = await world.client.send(
    new GetItemCommand({
      TableName: world.idempotencyTable.tableName,
      Key: { id: { S: intentKeyOf(scope) } },
      ConsistentRead: true,
    }),
  );
  return Item ? (unmarshall(Item) as Record<string, unknown>) : {};
}

/** Two hours ago, on a whole second. */
export const twoHoursAgoOnTheSecond = () => Math.floor((Date.now() - 2 * 3_600_000) / 1000) * 1000;
