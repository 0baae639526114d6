import {
  DescribeStreamCommand,
  type DynamoDBStreamsClient,
  GetRecordsCommand,
  GetShardIteratorCommand,
  ListStreamsCommand,
  type Shard,
  type _Record as StreamRecord,
  TrimmedDataAccessException,
} from '@aws-sdk/client-dynamodb-streams';

export interface LocalStreamFeedOptions {
  /**
   * Pages (GetRecords calls, up to 1,000 records each) read from one shard in one {@link LocalStreamFeed.poll};
   * the rest is read by the next poll.
   * @default 100
   */
  readonly maxPagesPerShard?: number;
}

/**
 * What Lambda's event source mapping does with the idempotency table's stream, done locally on DynamoDB
 * Local's stream: each {@link poll} reads every shard from where the last one stopped (from the trim
 * horizon the first time) and hands each page of records to a handler — `Completer.onStream` in
 * `npm start` — in stream order. A shard's position moves past a page only once its handler resolved: a
 * handler that throws gets the same records again on the next poll (at least once, like the mapping's
 * retries).
 *
 * Deterministic: no timer, no background reading. Positions are kept in memory, so a new feed starts
 * from the trim horizon again (the completer tolerates records seen twice).
 */
export class LocalStreamFeed {
  /** Per shard (`<stream ARN> <shard id>`): the sequence number of the last record handed over. */
  readonly #positions = new Map<string, string>();
  /** Closed shards read to their end: nothing more will ever come from them. */
  readonly #exhausted = new Set<string>();
  readonly #maxPagesPerShard: number;

  constructor(
    private readonly streams: DynamoDBStreamsClient,
    private readonly tableName: string,
    options: LocalStreamFeedOptions = {},
  ) {
    this.#maxPagesPerShard = options.maxPagesPerShard ?? 100;
  }

  /**
   * Reads what the table's stream holds past the feed's positions, page by page, into `handler`; resolves
   * with the number of records handed over. Rejects with the handler's error (or a Streams API error),
   * leaving the failed page to the next poll.
   */
  async poll(handler: (records: StreamRecord[]) => Promise<void>): Promise<number> {
    let handed = 0;
    for (const streamArn of await this.#streamArns()) {
      for (const shardId of await this.#shardIds(streamArn)) {
        if (this.#exhausted.has(`${streamArn} ${shardId}`)) continue;
        handed += await this.#readShard(streamArn, shardId, handler);
      }
    }
    return handed;
  }

  /** Every stream of the table (one, unless its stream was turned off and on again), by `ListStreams`. */
  async #streamArns(): Promise<string[]> {
    const arns: string[] = [];
    let start: string | undefined;
    do {
      const page = await this.streams.send(
        new ListStreamsCommand({ TableName: this.tableName, ...(start ? { ExclusiveStartStreamArn: start } : {}) }),
      );
      for (const stream of page.Streams ?? []) if (stream.StreamArn) arns.push(stream.StreamArn);
      start = page.LastEvaluatedStreamArn;
    } while (start);
    return arns;
  }

  /** The stream's shards, every page of `DescribeStream`, each parent before its children. */
  async #shardIds(streamArn: string): Promise<string[]> {
    const shards: Shard[] = [];
    let start: string | undefined;
    do {
      const { StreamDescription } = await this.streams.send(
        new DescribeStreamCommand({ StreamArn: streamArn, ...(start ? { ExclusiveStartShardId: start } : {}) }),
      );
      shards.push(...(StreamDescription?.Shards ?? []));
      start = StreamDescription?.LastEvaluatedShardId;
    } while (start);
    return parentsFirst(shards);
  }

  /** One shard, from its position to its end (an empty page) or the page budget. */
  async #readShard(
    streamArn: string,
    shardId: string,
    handler: (records: StreamRecord[]) => Promise<void>,
  ): Promise<number> {
    const shard = `${streamArn} ${shardId}`;
    let iterator = await this.#iterator(streamArn, shardId, shard);
    let handed = 0;
    for (let pages = 0; iterator && pages < this.#maxPagesPerShard; pages++) {
      const page = await this.streams.send(new GetRecordsCommand({ ShardIterator: iterator }));
      const records = page.Records ?? [];
      if (records.length > 0) {
        await handler(records);
        // Only now: a page whose handler threw is read again by the next poll.
        const last = records.at(-1)?.dynamodb?.SequenceNumber;
        if (last) this.#positions.set(shard, last);
        handed += records.length;
      }
      iterator = page.NextShardIterator;
      if (!iterator) this.#exhausted.add(shard); // a closed shard, read to its end
      if (records.length === 0) break;
    }
    return handed;
  }

  /** An iterator just past the last record handed over, or at the trim horizon for a shard not read yet. */
  async #iterator(streamArn: string, shardId: string, shard: string): Promise<string | undefined> {
    const after = this.#positions.get(shard);
    try {
      const { ShardIterator } = await this.streams.send(
        new GetShardIteratorCommand({
          StreamArn: streamArn,
          ShardId: shardId,
          ...(after
            ? { ShardIteratorType: 'AFTER_SEQUENCE_NUMBER', SequenceNumber: after }
            : { ShardIteratorType: 'TRIM_HORIZON' }),
        }),
      );
      return ShardIterator;
    } catch (error) {
      // The position fell out of the stream's 24 h: what is left is read from the trim horizon.
      if (!(after && error instanceof TrimmedDataAccessException)) throw error;
      this.#positions.delete(shard);
      return this.#iterator(streamArn, shardId, shard);
    }
  }
}

/** Shard ids with every parent listed before its children (stream order across a shard split). */
function parentsFirst(shards: readonly Shard[]): string[] {
  const ids = new Set(shards.map((shard) => shard.ShardId!));
  const ordered: string[] = [];
  const placed = new Set<string>();
  function place(shard: Shard): void {
    const id = shard.ShardId!;
    if (placed.has(id)) return;
    placed.add(id);
    const parent = shard.ParentShardId;
    if (parent && ids.has(parent)) place(shards.find((candidate) => candidate.ShardId === parent)!);
    ordered.push(id);
  }
  for (const shard of shards) place(shard);
  return ordered;
}
