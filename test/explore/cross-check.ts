import { ScanCommand } from '@aws-sdk/client-dynamodb';
import { TABLES, type TableId, tableName } from '../../app/tables';
import { runSchedule, type ScheduleOptions, type ScheduleResult } from './schedule';
import type { Exchange, ExploreWorld } from './world';

/** Where the engines first disagreed on a schedule: the line of its record, on each side. */
export interface Difference {
  readonly index: number;
  readonly local: string;
  readonly memory: string;
}

/**
 * Runs one schedule on DynamoDB Local's world, then on the in-memory engine's (from the same clock
 * start), both made with `record`; resolves with Local's result and the first difference, if any.
 */
export async function crossCheckSchedule(
  worlds: { readonly local: ExploreWorld; readonly memory: ExploreWorld },
  options: ScheduleOptions,
): Promise<{ result: ScheduleResult; difference: Difference | undefined }> {
  const from = { local: worlds.local.exchanges!.length, memory: worlds.memory.exchanges!.length };
  const result = await runSchedule(worlds.local, options);
  const other = await runSchedule(worlds.memory, { ...options, clockStart: result.clockStart });
  const difference = firstDifference(
    await scheduleRecord(worlds.local, result, from.local),
    await scheduleRecord(worlds.memory, other, from.memory),
  );
  return { result, difference };
}

/**
 * The cross-check of the in-memory engine against DynamoDB Local: one schedule, run on each (same
 * seed, same forced faults, same clock start), must leave the same record — line by line:
 *
 * 1. every request an actor sent and its outcome, in order: the output (items, counts, pages, capacity
 *    units) or the error — for a refused condition, which write it was and the item it returned;
 * 2. the trace (actor, request, fault, simulated time of every step);
 * 3. every answer an agent got;
 * 4. the tenant's items in every table at the end, and the violations found.
 *
 * Normalised, because neither the seed nor the clock fixes them: the random ids (claim ids from
 * `randomUUID`, the ledger's `re_…` movement ids) are renamed in order of first appearance, on each side;
 * of the stream, only what the completer reads is kept (event names, keys, images, their order and
 * whether an iterator came back) — sequence numbers, event ids, shard ids, ARNs, iterators and
 * `ApproximateCreationDateTime` (DynamoDB Local's wall clock) are each engine's own.
 */
export async function scheduleRecord(world: ExploreWorld, result: ScheduleResult, from: number): Promise<string[]> {
  const rename = renamer();
  const lines: string[] = [];
  for (const [index, exchange] of (world.exchanges ?? []).slice(from).entries()) {
    lines.push(`request ${index} (step ${exchange.step}, ${exchange.actor}) ${describeExchange(exchange)}`);
  }
  for (const line of result.trace) {
    lines.push(`trace ${line.step} ${line.actor} ${line.request} ${line.fault} +${line.at}ms`);
  }
  for (const answer of result.answers) {
    lines.push(`answer ${answer.actor} ${answer.intent} ${answer.key} ${answer.phase} ${canonical(answer.result)}`);
  }
  for (const [table, items] of await tenantItems(world, result.tenant)) {
    for (const item of items) lines.push(`table ${table} ${item}`);
  }
  for (const violation of result.violations) lines.push(`violation ${violation}`);
  return lines.map(rename);
}

/** The first line two records differ at, if any. */
export function firstDifference(local: readonly string[], memory: readonly string[]): Difference | undefined {
  for (let index = 0; index < Math.max(local.length, memory.length); index++) {
    if (local[index] !== memory[index]) {
      return { index, local: local[index] ?? '(nothing)', memory: memory[index] ?? '(nothing)' };
    }
  }
  return undefined;
}

const STREAM_COMMANDS = new Set(['ListStreams', 'DescribeStream', 'GetShardIterator', 'GetRecords']);

function describeExchange({ command, request, input, outcome }: Exchange): string {
  if (!STREAM_COMMANDS.has(command)) return `${request} ${canonical(input)} → ${canonical(outcome)}`;
  if ('error' in outcome) return `${request} → ${canonical(outcome)}`;
  const output = outcome.output as Record<string, unknown>;
  switch (command) {
    case 'ListStreams':
      return `${request} → ${(output.Streams as unknown[] | undefined)?.length ?? 0} stream(s)`;
    case 'DescribeStream': {
      const shards = ((output.StreamDescription as { Shards?: Array<Record<string, unknown>> }).Shards ?? []).map(
        (shard) =>
          `${shard.ParentShardId ? 'child' : 'root'}${(shard.SequenceNumberRange as Record<string, unknown>)?.EndingSequenceNumber ? ' closed' : ''}`,
      );
      return `${request} → shards [${shards.join(', ')}]`;
    }
    case 'GetShardIterator':
      return `${request} ${(input as { ShardIteratorType: string }).ShardIteratorType} → ${output.ShardIterator ? 'iterator' : 'none'}`;
    default: {
      const records = ((output.Records ?? []) as Array<{ eventName: string; dynamodb: Record<string, unknown> }>).map(
        ({ eventName, dynamodb }) =>
          `${eventName} ${canonical({ Keys: dynamodb.Keys, NewImage: dynamodb.NewImage, OldImage: dynamodb.OldImage })}`,
      );
      return `${request} → [${records.join('; ')}] ${output.NextShardIterator ? 'next' : 'end'}`;
    }
  }
}

/** The tenant's items in each table (the idempotency table's included), by table. */
async function tenantItems(world: ExploreWorld, tenant: string): Promise<Array<[string, string[]]>> {
  const tables: Array<TableId | 'idempotency'> = ['idempotency', ...(Object.keys(TABLES) as TableId[])];
  const found: Array<[string, string[]]> = [];
  for (const table of tables) {
    const items: string[] = [];
    let start: Record<string, never> | undefined;
    do {
      const page = await world.client.send(
        new ScanCommand({
          TableName: tableName(table, world.env),
          FilterExpression: '#tenant = :tenant',
          ExpressionAttributeNames: { '#tenant': 'tenant' },
          ExpressionAttributeValues: { ':tenant': { S: tenant } },
          ConsistentRead: true,
          ExclusiveStartKey: start,
        }),
      );
      for (const item of page.Items ?? []) items.push(canonical(item));
      start = page.LastEvaluatedKey as typeof start;
    } while (start);
    // In scan order (the partition hash's): the engine's order is checked too, and random ids do not move it.
    found.push([table, items]);
  }
  return found;
}

/**
 * JSON with every object's keys sorted, and every set's members (`SS`, `NS`, `BS`): DynamoDB returns an item's
 * attributes, and a set's members, in no fixed order.
 */
export function canonical(value: unknown): string {
  return JSON.stringify(value, (key, current) => {
    if (Array.isArray(current) && (key === 'SS' || key === 'NS' || key === 'BS')) {
      return [...current].sort((a, b) =>
        String(a).replace(RANDOM_ID, '').localeCompare(String(b).replace(RANDOM_ID, '')),
      );
    }
    if (current === null || typeof current !== 'object' || Array.isArray(current)) return current;
    if (current instanceof Uint8Array) return Buffer.from(current).toString('base64');
    return Object.fromEntries(
      Object.keys(current as object)
        .sort()
        .map((k) => [k, (current as Record<string, unknown>)[k]]),
    );
  });
}

/** Random ids the seed does not fix: claim ids (UUIDs) and ledger movement ids (`re_` and 32 hex digits). */
const RANDOM_ID = /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}|\bre_[0-9a-f]{32}\b/g;

/** Renames each random id to `<id N>`, N in order of first appearance (one record's ids, one mapping). */
function renamer(): (line: string) => string {
  const names = new Map<string, string>();
  return (line) =>
    line.replace(RANDOM_ID, (id) => {
      let name = names.get(id);
      if (!name) {
        name = `<id ${names.size + 1}>`;
        names.set(id, name);
      }
      return name;
    });
}
