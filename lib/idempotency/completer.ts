import { IdempotencyRecordStatus } from '@aws-lambda-powertools/idempotency';
import type { Logger } from '@aws-lambda-powertools/logger';
import { type DynamoDBClient, GetItemCommand, PutItemCommand } from '@aws-sdk/client-dynamodb';
import {
  DescribeStreamCommand,
  type DynamoDBStreamsClient,
  GetRecordsCommand,
  GetShardIteratorCommand,
  ListStreamsCommand,
  type _Record as StreamRecord,
  TrimmedDataAccessException,
} from '@aws-sdk/client-dynamodb-streams';
import { marshall, unmarshall } from '@aws-sdk/util-dynamodb';
import { DEFAULT_IDEMPOTENCY_TABLE_NAME, DEFAULT_RECORD_ATTRIBUTES, type RecordAttributes } from './record';
import type { ToolRuntime } from './runtime';
import type { ToolDefinition } from './tool';
import type { InvocationDeadline, JsonObject } from './types';

export interface CompleterOptions {
  readonly client: DynamoDBClient;
  /** Reads the idempotency table's stream (NEW_IMAGE). */
  readonly streams: DynamoDBStreamsClient;
  /** The runtime that finishes a call: the same claim, fingerprint and downstream key as the first try. */
  readonly runtime: ToolRuntime;
  /** The tools whose calls can be finished, by name. */
  readonly tools: readonly ToolDefinition[];
  /** @default DEFAULT_IDEMPOTENCY_TABLE_NAME */
  readonly tableName?: string;
  /**
   * The table's stream. Given, no `ListStreams` is needed (it takes `*` in IAM).
   * @default the table's streams, listed by table name
   */
  readonly streamArn?: string;
  /** @default DEFAULT_RECORD_ATTRIBUTES */
  readonly attributes?: Partial<RecordAttributes>;
  /**
   * Stream reads per shard per sweep, at most (each returns up to 1 MB).
   * @default 100
   */
  readonly maxReadsPerShard?: number;
  /**
   * Where a call it cannot finish (an unknown tool, no stored call) is reported.
   * @default undefined
   */
  readonly logger?: Logger;
}

/** What one sweep did. */
export interface SweepReport {
  /** Stream records read since the last sweep. */
  readonly recordsRead: number;
  /** Claims whose lock had expired without a result: abandoned work found. */
  readonly abandonedFound: number;
  /** Of those, finished by this sweep (the record now holds a receipt or the call's outcome). */
  readonly completedBySweep: number;
  /** Claims still running under a live lock: checked again next sweep. */
  readonly stillRunning: number;
}

/** Time kept back at the end of a sweep to write the checkpoint. */
const SWEEP_RESERVE_MS = 2_000;

/** Empty stream pages in a row after which a shard counts as read up to now. */
const EMPTY_PAGES_BEFORE_CAUGHT_UP = 3;

/** A stored call, or undefined when it is not one (never throws: one bad record must not stop sweeps). */
function parseCall(text: unknown): { user: string; key: string; args: JsonObject } | undefined {
  if (typeof text !== 'string') return undefined;
  try {
    const call = JSON.parse(text) as { user?: unknown; key?: unknown; args?: unknown };
    if (typeof call.user !== 'string' || typeof call.key !== 'string') return undefined;
    if (call.args === null || typeof call.args !== 'object') return undefined;
    return call as { user: string; key: string; args: JsonObject };
  } catch {
    return undefined;
  }
}

/** The item that remembers, between sweeps, how far the stream was read and which claims still run. */
const CHECKPOINT_KEY = 'completer#checkpoint';

interface Checkpoint {
  /** Last sequence number read, per shard. */
  readonly shards: Record<string, string>;
  /** Record keys of claims that were still running at the last sweep. */
  readonly running: readonly string[];
}

/**
 * Finishes abandoned work: a call whose worker died (Lambda killed, a crash) after its claim leaves an
 * INPROGRESS record; without anyone retrying it, the completer re-runs it through the same runtime —
 * same claim (taken over once the lock expired), same fingerprint, same downstream key — so the provider
 * replays instead of moving money again, and the record ends completed.
 *
 * How it finds them, by cost: it reads the idempotency table's **stream** since its last sweep (no
 * index write on any call, no table scan), folds the images per record, and looks only at records whose
 * last image is still INPROGRESS — almost every call completes within its own batch of records and costs
 * the sweep nothing. One GetItem per remaining candidate, one checkpoint PutItem per sweep.
 */
export class Completer {
  readonly #options: CompleterOptions;
  readonly #tableName: string;
  readonly #attr: RecordAttributes;
  readonly #tools: ReadonlyMap<string, ToolDefinition>;

  constructor(options: CompleterOptions) {
    this.#options = options;
    this.#tableName = options.tableName ?? DEFAULT_IDEMPOTENCY_TABLE_NAME;
    this.#attr = { ...DEFAULT_RECORD_ATTRIBUTES, ...options.attributes };
    this.#tools = new Map(options.tools.map((tool) => [tool.name, tool]));
  }

  /** One sweep: read the stream since the checkpoint, finish what was abandoned, save the checkpoint. */
  async sweep(deadline: InvocationDeadline): Promise<SweepReport> {
    const checkpoint = await this.#readCheckpoint();
    const { lastImages, shards, recordsRead } = await this.#readStream(checkpoint);
    const candidates = new Set(checkpoint.running);
    for (const [key, { image }] of lastImages) {
      if (image[this.#attr.status] === IdempotencyRecordStatus.INPROGRESS) candidates.add(key);
      else candidates.delete(key);
    }

    let abandonedFound = 0;
    let completedBySweep = 0;
    // A candidate leaves the list only once its record is no longer in flight; anything not settled
    // now — still running, a finish that failed, no time left — is checked again next sweep.
    const running: string[] = [];
    for (const key of candidates) {
      if (deadline.getRemainingTimeInMillis() < SWEEP_RESERVE_MS) {
        running.push(key);
        continue;
      }
      const record = await this.#record(key);
      if (!record || record[this.#attr.status] !== IdempotencyRecordStatus.INPROGRESS) continue;
      const lockEnds = record[this.#attr.inProgressExpiry] as number | undefined;
      if (lockEnds !== undefined && lockEnds >= Date.now()) {
        running.push(key);
        continue;
      }
      abandonedFound += 1;
      if (await this.#finish(record, deadline)) completedBySweep += 1;
      else running.push(key);
    }
    await this.#writeCheckpoint({ shards, running });
    return { recordsRead, abandonedFound, completedBySweep, stillRunning: running.length };
  }

  /**
   * Re-runs an abandoned call as its caller would retry it: the same arguments under the same key.
   * True when the record now holds its outcome; a business error (the claim released: nothing to
   * finish) counts too. False — checked again next sweep — when it could not be settled now.
   */
  async #finish(record: Record<string, unknown>, deadline: InvocationDeadline): Promise<boolean> {
    const tool = this.#tools.get(record[this.#attr.tool] as string);
    const call = parseCall(record[this.#attr.call]);
    if (!tool || !call) {
      this.#options.logger?.warn('abandoned call the completer cannot finish', {
        tool: record[this.#attr.tool] as string,
        reason: tool ? 'no stored call' : 'unknown tool',
      });
      return false;
    }
    const identity = { tenant: record[this.#attr.tenant] as string, user: call.user };
    const result = await this.#options.runtime.invoke(
      tool,
      identity,
      { ...call.args, idempotency_key: call.key },
      deadline,
    );
    if (result.ok) return true;
    if ('status' in result) return false; // another call holds it now
    return ['invalid_args', 'not_found', 'conflict'].includes(result.error.code); // released: nothing left
  }

  async #readStream(checkpoint: Checkpoint) {
    const streams = this.#options.streams;
    const maxReads = this.#options.maxReadsPerShard ?? 100;
    const Streams = this.#options.streamArn
      ? [{ StreamArn: this.#options.streamArn }]
      : ((await streams.send(new ListStreamsCommand({ TableName: this.#tableName }))).Streams ?? []);
    const lastImages = new Map<string, { sequence: bigint; image: Record<string, unknown> }>();
    const shards: Record<string, string> = {};
    let recordsRead = 0;
    for (const stream of Streams) {
      let startShard: string | undefined;
      do {
        const { StreamDescription } = await streams.send(
          new DescribeStreamCommand({ StreamArn: stream.StreamArn, ExclusiveStartShardId: startShard }),
        );
        for (const shard of StreamDescription?.Shards ?? []) {
          const shardId = shard.ShardId!;
          const after = checkpoint.shards[shardId];
          let iterator: string | undefined;
          try {
            iterator = (
              await streams.send(
                new GetShardIteratorCommand({
                  StreamArn: stream.StreamArn,
                  ShardId: shardId,
                  ...(after
                    ? { ShardIteratorType: 'AFTER_SEQUENCE_NUMBER', SequenceNumber: after }
                    : { ShardIteratorType: 'TRIM_HORIZON' }),
                }),
              )
            ).ShardIterator;
          } catch (error) {
            // The checkpoint fell out of the stream's 24 h: read what is left (the running list
            // carries the claims that matter).
            if (!(error instanceof TrimmedDataAccessException)) throw error;
            iterator = (
              await streams.send(
                new GetShardIteratorCommand({
                  StreamArn: stream.StreamArn,
                  ShardId: shardId,
                  ShardIteratorType: 'TRIM_HORIZON',
                }),
              )
            ).ShardIterator;
          }
          if (after) shards[shardId] = after;
          // An empty page may come before more records: stop after a few in a row (or the budget).
          let emptyPages = 0;
          for (let reads = 0; iterator && reads < maxReads && emptyPages < EMPTY_PAGES_BEFORE_CAUGHT_UP; reads++) {
            const page = await streams.send(new GetRecordsCommand({ ShardIterator: iterator }));
            const records = page.Records ?? [];
            for (const record of records) this.#fold(record, lastImages);
            recordsRead += records.length;
            const last = records.at(-1)?.dynamodb?.SequenceNumber;
            if (last) shards[shardId] = last;
            emptyPages = records.length > 0 ? 0 : emptyPages + 1;
            iterator = page.NextShardIterator; // undefined once a closed shard is read to its end
          }
        }
        startShard = StreamDescription?.LastEvaluatedShardId;
      } while (startShard);
    }
    return { lastImages, shards, recordsRead };
  }

  /**
   * Keeps each record's newest image (by sequence number: shards are not read in order); intents and
   * the checkpoint are not calls.
   */
  #fold(record: StreamRecord, lastImages: Map<string, { sequence: bigint; image: Record<string, unknown> }>): void {
    const keys = record.dynamodb?.Keys;
    const sequence = BigInt(record.dynamodb?.SequenceNumber ?? '0');
    if (!keys) return;
    const key = unmarshall(keys as never)[this.#attr.key] as string;
    if (key === CHECKPOINT_KEY || key.includes('#intent#')) return;
    const seen = lastImages.get(key);
    if (seen && seen.sequence > sequence) return;
    const image = record.dynamodb?.NewImage;
    lastImages.set(key, { sequence, image: image ? unmarshall(image as never) : {} });
  }

  async #record(key: string): Promise<Record<string, unknown> | undefined> {
    const { Item } = await this.#options.client.send(
      new GetItemCommand({
        TableName: this.#tableName,
        Key: marshall({ [this.#attr.key]: key }),
        ConsistentRead: true,
      }),
    );
    return Item ? unmarshall(Item) : undefined;
  }

  async #readCheckpoint(): Promise<Checkpoint> {
    const item = await this.#record(CHECKPOINT_KEY);
    const text = item?.[this.#attr.data];
    return typeof text === 'string' ? (JSON.parse(text) as Checkpoint) : { shards: {}, running: [] };
  }

  async #writeCheckpoint(checkpoint: Checkpoint): Promise<void> {
    await this.#options.client.send(
      new PutItemCommand({
        TableName: this.#tableName,
        Item: marshall({ [this.#attr.key]: CHECKPOINT_KEY, [this.#attr.data]: JSON.stringify(checkpoint) }),
      }),
    );
  }
}
