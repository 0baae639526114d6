// `retrysafe/tools/dynamodb`: the DynamoDB writes a tool file makes its effect with, the correct way once.
// A subpath of its own so that `retrysafe/tools` (what a listing or a schema export loads) stays free of
// the AWS SDK; this one loads `@aws-sdk/client-dynamodb` and `@aws-sdk/lib-dynamodb`, the app's own copies.
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { ToolContext } from '../idempotency/definition';
import { putIfAbsent } from '../idempotency/protocol/commit';

export { putIfAbsent, type Written } from '../idempotency/protocol/commit';

/** The attribute `createOnce` stamps with the id of the call that created the item, unless told another. */
export const DEFAULT_STAMP_ATTRIBUTE = 'created_by';

/** The item as `createOnce` writes it: the item given, stamped with the creating call's id. */
export type Stamped<T extends object, S extends string> = T & { readonly [K in S]: string };

export interface CreateOnceOptions<T extends object, S extends string> {
  /** The table's name, as the app's services have it (`tableName('notes')` of the core services). */
  readonly table: string;
  /**
   * The table's partition key attribute. The write is conditioned on `attribute_not_exists` of it: it
   * succeeds only if no item with the item's whole key (partition and sort key) is in the table.
   */
  readonly key: keyof T & string;
  /**
   * The item to create, without its stamp. Its key must be the same on every attempt of the call:
   * derived from `context.downstreamKey` (`derivedId('note', downstreamKey)`), or the tool's natural key.
   */
  readonly item: T & { readonly [K in NoInfer<S>]?: never };
  /** The call's context (`execute`'s second argument): its `callId` is stamped on the item. */
  readonly context: Pick<ToolContext, 'callId'>;
  /**
   * The attribute that holds the id of the call that created the item. List it in the table schema's
   * `callStamps`, so tenant erase keeps an item a call still in flight created.
   * @default 'created_by'
   */
  readonly stampAttribute?: S;
}

/** What `createOnce` found: the item the table holds, and whether another call created it. */
export interface CreatedOnce<T> {
  /** The item as the table holds it: created now, by an earlier attempt of this call, or by another call. */
  readonly item: T;
  /**
   * `execute`'s `replayed`: false when this call created the item — now, or in an earlier attempt that
   * died before it answered (the item carries this call's id) —, true when another call did.
   */
  readonly replayed: boolean;
}

/**
 * Creates `item` once, stamped with the call's `callId`, and says whether this call created it — what a
 * tool's `execute` returns as `replayed`. One conditional PutItem (`attribute_not_exists` on the key,
 * `ReturnValuesOnConditionCheckFailure: 'ALL_OLD'`): when the item is there already it comes back on the
 * same round trip, nothing is written, and its stamp decides.
 *
 * The rule it keeps: **exactly one answer per effect says `idempotent: false`** — the call whose write
 * committed the effect. A call that crashed after this write is retried (by its client, or by the
 * completer) with the same `downstreamKey` and the same `callId`: the retry finds the item it wrote
 * itself and is that call (`replayed: false`); every other call finds another id, or none, and replays.
 * Answering `replayed: !written` instead would tell the retry it replayed, and no answer would ever say
 * the effect was made.
 *
 * ```ts
 * async execute(args, context, { documents, notes }: Services) {
 *   const { item, replayed } = await createOnce(documents, {
 *     table: notes,
 *     key: 'tenant',
 *     item: { tenant: context.identity.tenant, note_id: derivedId('note', context.downstreamKey), text: args.text },
 *     context,
 *   });
 *   return { receipt: { note_id: item.note_id, text: item.text }, replayed };
 * }
 * ```
 */
export async function createOnce<T extends object, S extends string = typeof DEFAULT_STAMP_ATTRIBUTE>(
  documents: DynamoDBDocumentClient,
  options: CreateOnceOptions<T, S>,
): Promise<CreatedOnce<Stamped<T, S>>> {
  const { table, key, item, context } = options;
  const stampAttribute = (options.stampAttribute ?? DEFAULT_STAMP_ATTRIBUTE) as S;
  const stamped = { ...item, [stampAttribute]: context.callId } as Stamped<T, S>;
  const created = await putIfAbsent(documents, table, key, stamped);
  if (created.written) return { item: created.item, replayed: false };
  // Whose write committed it: this call's (an earlier attempt that died), another call's, or no call's.
  const stamp: unknown = (created.existing as Record<string, unknown>)[stampAttribute];
  return { item: created.existing, replayed: stamp !== context.callId };
}
