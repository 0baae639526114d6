// The completer's one write on a call record (docs/state-machine.md, "The completer"): giving up on a call it
// cannot finish. What it decides, and when, is `../completer.ts`.
import { UpdateItemCommand } from '@aws-sdk/client-dynamodb';
import type { StalledReason } from './record';
import { conditionally, type IdempotencyTable, lockEndedOn } from './table';

/**
 * mark stalled: abandoned (on `claimId`) ──▶ stalled. The completer gives up on a call after its
 * `maxAttempts`, or at once when it cannot re-run it (`reason`: an unknown tool, an unreadable call) — on
 * the claim it read, only while that claim's lock has ended (no attempt runs it) and the record has not expired (`lockEndedOn`). The record keeps everything a retry needs: a caller's
 * retry with the same key and arguments takes it over as it would an abandoned one (a new claim: no
 * longer stalled), and erase with the app's tables closes it. `changed` when the record moved on since it
 * was read (taken over, completed, erased, expired).
 */
export async function markStalled(
  table: IdempotencyTable,
  recordKey: string,
  claimId: string,
  nowMs: number,
  reason: StalledReason,
): Promise<'stalled' | 'changed'> {
  const attr = table.attributes;
  const ended = lockEndedOn(attr, claimId, { nowMs, notBeforeAtS: Math.floor(nowMs / 1000) });
  const written = await conditionally(
    table.client,
    new UpdateItemCommand({
      TableName: table.tableName,
      Key: { [attr.key]: { S: recordKey } },
      UpdateExpression: 'SET #stalled = :claim, #reason = :reason',
      ConditionExpression: ended.expression,
      ExpressionAttributeNames: { ...ended.names, '#stalled': attr.stalledClaim, '#reason': attr.stalledReason },
      ExpressionAttributeValues: { ...ended.values, ':reason': { S: reason } },
    }),
  );
  return written.passed ? 'stalled' : 'changed';
}
