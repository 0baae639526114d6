// The writes of a dedupe window's intent (docs/state-machine.md, "Dedupe-window intent"), one function per
// transition; every one but the first is conditioned on the holder as it was read (`heldBy`), so two
// callers can never both take an intent over, and none frees or deletes one taken over meanwhile.
import { createHash } from 'node:crypto';
import { DeleteItemCommand, PutItemCommand, UpdateItemCommand } from '@aws-sdk/client-dynamodb';
import { marshall } from '@aws-sdk/util-dynamodb';
import type { Identity } from '../types';
import { type Intent, type IntentHolder, intentOf } from './record';
import { type Condition, conditionally, type IdempotencyTable } from './table';

/** What an intent is: this tenant's user asked this tool for these exact arguments. */
export interface IntentScope {
  readonly tool: string;
  readonly identity: Identity;
  readonly fingerprint: string;
}

/** `<tool>#intent#<sha256(tenant, user, fingerprint)>`. */
export function intentKeyOf({ tool, identity, fingerprint }: IntentScope): string {
  const hash = createHash('sha256')
    .update(JSON.stringify([identity.tenant, identity.user, fingerprint]))
    .digest('hex');
  return `${tool}#intent#${hash}`;
}

/** An intent as `createIntent` and `replaceIntent` write it. */
export interface NewIntent {
  readonly intentKey: string;
  readonly tenant: string;
  readonly tool: string;
  readonly holder: IntentHolder;
  readonly downstreamKey: string;
  readonly windowEndS: number;
  /** Its TTL (epoch s): the window's end plus the records' TTL. */
  readonly expiresAtS: number;
}

function itemOf(table: IdempotencyTable, intent: NewIntent): Record<string, unknown> {
  const attr = table.attributes;
  return {
    [attr.key]: intent.intentKey,
    [attr.tenant]: intent.tenant,
    [attr.tool]: intent.tool,
    [attr.intentHolder]: intent.holder.recordKey,
    [attr.claim]: intent.holder.claimId,
    [attr.callInstance]: intent.holder.callId,
    [attr.downstreamKey]: intent.downstreamKey,
    [attr.windowEnd]: intent.windowEndS,
    [attr.expiry]: intent.expiresAtS,
  };
}

/** The one condition that an intent is still held as it was read: by `from`'s record, on `from`'s claim. */
function heldBy(table: IdempotencyTable, from: Pick<IntentHolder, 'recordKey' | 'claimId'>): Condition {
  return {
    expression: '#holder = :from AND #claim = :fromClaim',
    names: { '#holder': table.attributes.intentHolder, '#claim': table.attributes.claim },
    values: marshall({ ':from': from.recordKey, ':fromClaim': from.claimId }),
  };
}

/**
 * create: absent ──▶ held by this call, under its own downstream key, fixed on the intent in the same
 * write (a PutItem where none is). Refused, it answers the intent in the way (undefined only if DynamoDB
 * returned none, or it is not an intent).
 */
export async function createIntent(
  table: IdempotencyTable,
  intent: NewIntent,
): Promise<{ readonly kind: 'created' } | { readonly kind: 'held'; readonly held: Intent | undefined }> {
  const written = await conditionally(
    table.client,
    new PutItemCommand({
      TableName: table.tableName,
      Item: marshall(itemOf(table, intent)),
      ConditionExpression: 'attribute_not_exists(#id)',
      ExpressionAttributeNames: { '#id': table.attributes.key },
      ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
    }),
  );
  if (written.passed) return { kind: 'created' };
  return { kind: 'held', held: written.item && intentOf(written.item, table.attributes) };
}

/**
 * replace: window over, holder settled (on the holder read) ──▶ held by this call, afresh (a PutItem
 * over it). `changed` when its holder changed since it was read.
 */
export async function replaceIntent(
  table: IdempotencyTable,
  intent: NewIntent,
  from: IntentHolder,
): Promise<'replaced' | 'changed'> {
  const held = heldBy(table, from);
  const written = await conditionally(
    table.client,
    new PutItemCommand({
      TableName: table.tableName,
      Item: marshall(itemOf(table, intent)),
      ConditionExpression: held.expression,
      ExpressionAttributeNames: held.names,
      ExpressionAttributeValues: held.values,
    }),
  );
  return written.passed ? 'replaced' : 'changed';
}

/**
 * swap: held by `from` (as read) ──▶ held by `to`, an UpdateItem of the holder; with `downstreamKey`,
 * the intent starts afresh under it (its holder was erased). `changed` when someone moved it first.
 */
export async function swapIntent(
  table: IdempotencyTable,
  intentKey: string,
  from: IntentHolder,
  to: IntentHolder,
  downstreamKey?: string,
): Promise<'swapped' | 'changed'> {
  const attr = table.attributes;
  const held = heldBy(table, from);
  const afresh = downstreamKey !== undefined;
  const written = await conditionally(
    table.client,
    new UpdateItemCommand({
      TableName: table.tableName,
      Key: marshall({ [attr.key]: intentKey }),
      UpdateExpression: `SET #holder = :to, #claim = :toClaim, #call = :toCall${afresh ? ', #downstream = :downstream' : ''}`,
      ConditionExpression: held.expression,
      ExpressionAttributeNames: {
        ...held.names,
        '#call': attr.callInstance,
        ...(afresh ? { '#downstream': attr.downstreamKey } : {}),
      },
      ExpressionAttributeValues: {
        ...held.values,
        ...marshall({ ':to': to.recordKey, ':toClaim': to.claimId, ':toCall': to.callId }),
        ...(afresh ? marshall({ ':downstream': downstreamKey }) : {}),
      },
    }),
  );
  return written.passed ? 'swapped' : 'changed';
}

/**
 * release: held by this call (its claim), created by it ──▶ absent, after its first attempt's business
 * error: nothing happened, so a corrected call can run. `changed` when it was taken over meanwhile.
 */
export async function releaseIntent(
  table: IdempotencyTable,
  intentKey: string,
  holder: IntentHolder,
): Promise<'released' | 'changed'> {
  return (await deleteIntent(table, intentKey, holder)) === 'deleted' ? 'released' : 'changed';
}

/**
 * erase: held by `from` (as read), whose call is no longer in flight ──▶ absent. `changed` when it was
 * taken over since it was read: it stays.
 */
export async function deleteIntent(
  table: IdempotencyTable,
  intentKey: string,
  from: Pick<IntentHolder, 'recordKey' | 'claimId'>,
): Promise<'deleted' | 'changed'> {
  const held = heldBy(table, from);
  const written = await conditionally(
    table.client,
    new DeleteItemCommand({
      TableName: table.tableName,
      Key: marshall({ [table.attributes.key]: intentKey }),
      ConditionExpression: held.expression,
      ExpressionAttributeNames: held.names,
      ExpressionAttributeValues: held.values,
    }),
  );
  return written.passed ? 'deleted' : 'changed';
}
