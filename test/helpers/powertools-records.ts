import { type DynamoDBClient, PutItemCommand } from '@aws-sdk/client-dynamodb';
import { recordKeyOf, validationOf } from '../../lib/idempotency/derivation';
import { fingerprint } from '../../lib/idempotency/fingerprint';
import { idempotencyTableName } from '../../lib/store/tables';

/**
 * What Powertools' handler leaves in flight on the idempotency table, for `send_email` called by `tenant`'s
 * ada under `key`: no claim, call instance, attempt or tenant — its lock ended 5 s ago (its worker died),
 * or none at all (it ran without a Lambda context: it holds the key to its TTL, `ttlS` from now). A record
 * with no tenant: a suite that writes one keeps an idempotency table of its own (`ownIdempotencyTable`).
 */
export async function putPowertoolsInFlight(
  client: DynamoDBClient,
  {
    tenant,
    key,
    args,
    ttlS,
    lock = 'ended',
  }: {
    readonly tenant: string;
    readonly key: string;
    readonly args: Record<string, string>;
    readonly ttlS: number;
    readonly lock?: 'ended' | 'none';
  },
): Promise<void> {
  await client.send(
    new PutItemCommand({
      TableName: idempotencyTableName(),
      Item: {
        id: { S: recordKeyOf('send_email', [tenant, 'ada', key]) },
        status: { S: 'INPROGRESS' },
        expiration: { N: String(Math.round(Date.now() / 1000) + ttlS) },
        ...(lock === 'ended' ? { in_progress_expiration: { N: String(Date.now() - 5_000) } } : {}),
        validation: { S: validationOf(fingerprint(args)) },
      },
    }),
  );
}
