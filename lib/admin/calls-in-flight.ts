import { type DynamoDBClient, ScanCommand } from '@aws-sdk/client-dynamodb';
import { unmarshall } from '@aws-sdk/util-dynamodb';
import { CallRecords, classify, DEFAULT_TTL_SECONDS, STATUS } from '../idempotency';
import { IDEMPOTENCY_ATTRIBUTES as ATTR } from '../store/tables';

/** A call in flight, as an operator reads it. */
export interface CallInFlight {
  readonly tool: string;
  /** `pending`: its lock is live (an attempt runs, or it was parked); `abandoned`: its lock ended, a retry or the completer finishes it. */
  readonly state: 'pending' | 'abandoned';
  /** The record key (`<tool>#<hash>`): the call's name in the logs and in `get_operation`. */
  readonly recordKey: string;
  readonly user: string | undefined;
  /** The client's idempotency key, while the record carries the call. */
  readonly clientKey: string | undefined;
  /** Attempts that claimed it: 1, then +1 per takeover. */
  readonly attempts: number;
  /** Since its first claim, in seconds (from its TTL and its tool's `ttlSeconds`), when the tool is known. */
  readonly ageSeconds: number | undefined;
  /** When its lock ends (epoch ms): a `pending` call is answered `pending` until then. */
  readonly lockEndsMs: number | undefined;
}

export interface CallsInFlightOptions {
  /** Only calls in this state. @default both */
  readonly state?: CallInFlight['state'];
  /** Each tool's `ttlSeconds`, by name, to tell a call's age. @default the default TTL for every tool */
  readonly ttlSecondsByTool?: Readonly<Record<string, number>>;
  /** Parallel segments of the Scan. @default 4 */
  readonly segments?: number;
  /** @default Date.now() */
  readonly nowMs?: number;
}

export interface CallsInFlightReport {
  readonly calls: readonly CallInFlight[];
  /** Read units the Scan consumed: it reads the whole idempotency table (no index costs a write per call). */
  readonly readUnits: number;
}

/**
 * A tenant's calls in flight, oldest first. By cost: a parallel Scan of the idempotency table filtered on
 * the tenant and the in-progress status, as tenant erase searches — the record key is a hash, and an
 * index by tenant would add a write unit to every call, so an operator's look pays instead.
 */
export async function callsInFlight(
  client: DynamoDBClient,
  table: string,
  tenant: string,
  options: CallsInFlightOptions = {},
): Promise<CallsInFlightReport> {
  const nowMs = options.nowMs ?? Date.now();
  const segments = options.segments ?? 4;
  const records = new CallRecords(client, table, ATTR);
  const calls: CallInFlight[] = [];
  let readUnits = 0;
  async function scanSegment(segment: number): Promise<void> {
    let startKey: ScanCommand['input']['ExclusiveStartKey'];
    do {
      const page = await client.send(
        new ScanCommand({
          TableName: table,
          Segment: segment,
          TotalSegments: segments,
          // Intents (dedupe windows) carry no call: only call records.
          FilterExpression: '#tenant = :tenant AND #status = :inProgress AND attribute_not_exists(#owner)',
          ExpressionAttributeNames: { '#tenant': ATTR.tenant, '#status': ATTR.status, '#owner': ATTR.intentOwner },
          ExpressionAttributeValues: { ':tenant': { S: tenant }, ':inProgress': { S: STATUS.inProgress } },
          ExclusiveStartKey: startKey,
          ConsistentRead: true,
          ReturnConsumedCapacity: 'TOTAL',
        }),
      );
      readUnits += page.ConsumedCapacity?.CapacityUnits ?? 0;
      for (const raw of page.Items ?? []) {
        const record = records.fromItem(unmarshall(raw));
        const state = classify(record, nowMs);
        if (state !== 'live' && state !== 'abandoned') continue; // expired: no call any more
        const shown = state === 'live' ? 'pending' : 'abandoned';
        if (options.state !== undefined && options.state !== shown) continue;
        const tool = record.tool ?? record.key.slice(0, record.key.indexOf('#'));
        const ttl = options.ttlSecondsByTool?.[tool] ?? DEFAULT_TTL_SECONDS;
        calls.push({
          tool,
          state: shown,
          recordKey: record.key,
          user: record.call?.user,
          clientKey: record.call?.key,
          attempts: record.attempt,
          ageSeconds:
            record.expiresAt === undefined
              ? undefined
              : Math.max(0, Math.round(nowMs / 1000 - (record.expiresAt - ttl))),
          lockEndsMs: record.lockEndsMs,
        });
      }
      startKey = page.LastEvaluatedKey;
    } while (startKey);
  }
  await Promise.all(Array.from({ length: segments }, (_, segment) => scanSegment(segment)));
  calls.sort((a, b) => (b.ageSeconds ?? 0) - (a.ageSeconds ?? 0) || a.recordKey.localeCompare(b.recordKey));
  return { calls, readUnits };
}
