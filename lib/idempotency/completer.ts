import { IdempotencyRecordStatus } from '@aws-lambda-powertools/idempotency';
import { type DynamoDBClient, GetItemCommand, PutItemCommand } from '@aws-sdk/client-dynamodb';
import {
  DescribeStreamCommand,
  type DynamoDBStreamsClient,
  GetRecordsCommand,
  GetShardIteratorCommand,
  ListStreamsCommand,
  type _Record as StreamRecord,
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
    for (const [key, image] of lastImages) {
      if (image[this.#attr.status] === IdempotencyRecordStatus.INPROGRESS) candidates.add(key);
      else candidates.delete(key);
    }

    let abandonedFound = 0;
    let completedBySweep = 0;
    const running: string[] = [];
    for (const key of candidates) {
      const record = await this.#record(key);
      if (!record || record[this.#attr.status] !== IdempotencyRecordStatus.INPROGRESS) continue;
      const lockEnds = record[this.#attr.inProgressExpiry] as number | undefined;
      if (lockEnds !== undefined && lockEnds >= Date.now()) {
        running.push(key);
        continue;
      }
      abandonedFound += 1;
      const outcome = await this.#finish(record, deadline);
      if (outcome === 'finished') completedBySweep += 1;
      if (outcome === 'running') running.push(key);
    }
    await this.#writeCheckpoint({ shards, running });
    return { recordsRead, abandonedFound, completedBySweep, stillRunning: running.length };
  }

  /** Re-runs an abandoned call as its caller would retry it: the same arguments under the same key. */
  async #finish(
    record: Record<string, unknown>,
    deadline: InvocationDeadline,
  ): Promise<'finished' | 'running' | 'skipped'> {
    const tool = this.#tools.get(record[this.#attr.tool] as string);
    const callText = record[this.#attr.call];
    if (!tool || typeof callText !== 'string') return 'skipped';
    const call = JSON.parse(callText) as { user: string; key: string; args: JsonObject };
    const identity = { tenant: record[this.#attr.tenant] as string, user: call.user };
    const result = await this.#options.runtime.invoke(
      tool,
      identity,
      { ...call.args, idempotency_key: call.key },
      deadline,
    );
    // A business error released the claim: nothing is left to finish. Pending: another call holds it.
    if (!result.ok && 'status' in result) return 'running';
    return 'finished';
  }

  async #readStream(checkpoint: Checkpoint) {
    const streams = this.#options.streams;
    const maxReads = this.#options.maxReadsPerShard ?? 100;
    const Streams = this.#options.streamArn
      ? [{ StreamArn: this.#options.streamArn }]
      : ((await streams.send(new ListStreamsCommand({ TableName: this.#tableName }))).Streams ?? []);
    const lastImages = new Map<string, Record<string, unknown>>();
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
          let iterator = (
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
          if (after) shards[shardId] = after;
          for (let reads = 0; iterator && reads < maxReads; reads++) {
            const page = await streams.send(new GetRecordsCommand({ ShardIterator: iterator }));
            const records = page.Records ?? [];
            for (const record of records) this.#fold(record, lastImages);
            recordsRead += records.length;
            const last = records.at(-1)?.dynamodb?.SequenceNumber;
            if (last) shards[shardId] = last;
            // An empty page means the shard is read up to now (or it is closed and done).
            iterator = records.length > 0 ? page.NextShardIterator : undefined;
          }
        }
        startShard = StreamDescription?.LastEvaluatedShardId;
      } while (startShard);
    }
    return { lastImages, shards, recordsRead };
  }

  /** Keeps each record's last image; intents and the checkpoint are not calls. */
  #fold(record: StreamRecord, lastImages: Map<string, Record<string, unknown>>): void {
    const keys = record.dynamodb?.Keys;
    if (!keys) return;
    const key = unmarshall(keys as never)[this.#attr.key] as string;
    if (key === CHECKPOINT_KEY || key.includes('#intent#')) return;
    const image = record.dynamodb?.NewImage;
    lastImages.set(key, image ? unmarshall(image as never) : {});
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
