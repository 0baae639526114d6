import { UpdateItemCommand } from '@aws-sdk/client-dynamodb';
import { STATUS } from '../call-state';
import { conditionally, type RecordTable } from './conditional-write';

/**
 * abandoned → stalled: the completer gives up on a call after its `maxAttempts` — on the claim it read,
 * only while that claim's lock has ended (no attempt runs it). The record keeps everything a retry needs:
 * a caller's retry with the same key and arguments takes it over as it would an abandoned one (a new
 * claim: no longer stalled), and erase with the app's tables closes it. `changed` when the record moved
 * on since it was read (taken over, completed, erased, expired).
 */
export async function markStalled(
  { client, tableName, attr }: RecordTable,
  key: string,
  claim: string,
  nowMs: number,
): Promise<'stalled' | 'changed'> {
  const written = await conditionally(
    client,
    new UpdateItemCommand({
      TableName: tableName,
      Key: { [attr.key]: { S: key } },
      UpdateExpression: 'SET #stalled = :claim',
      ConditionExpression: '#status = :inProgress AND #claim = :claim AND #lock < :now AND #expiry >= :nowS',
      ExpressionAttributeNames: {
        '#stalled': attr.stalledClaim,
        '#status': attr.status,
        '#claim': attr.claim,
        '#lock': attr.inProgressExpiry,
        '#expiry': attr.expiry,
      },
      ExpressionAttributeValues: {
        ':claim': { S: claim },
        ':inProgress': { S: STATUS.inProgress },
        ':now': { N: String(nowMs) },
        ':nowS': { N: String(Math.floor(nowMs / 1000)) },
      },
    }),
  );
  return written === 'done' ? 'stalled' : 'changed';
}
