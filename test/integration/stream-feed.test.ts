import { randomUUID } from 'node:crypto';
import { CreateTableCommand, DeleteTableCommand, PutItemCommand } from '@aws-sdk/client-dynamodb';
import type { _Record as StreamRecord } from '@aws-sdk/client-dynamodb-streams';
import { LocalStreamFeed } from '../../lib/local/stream-feed';
import { createStreamsClient } from '../../lib/local/streams-client';
import { createDynamoDBClient } from '../../lib/store/client';
import { createTableInput } from '../../lib/store/create-tables';
import { IDEMPOTENCY_TABLE } from '../../lib/store/tables';

// A table of its own: the shared idempotency table's stream carries every other suite's writes.
const TABLE = `stream-feed-${randomUUID().slice(0, 8)}`;
const client = createDynamoDBClient();
const streams = createStreamsClient();

beforeAll(async () => {
  await client.send(new CreateTableCommand(createTableInput(IDEMPOTENCY_TABLE, TABLE)));
});
afterAll(async () => {
  await client.send(new DeleteTableCommand({ TableName: TABLE }));
  client.destroy();
  streams.destroy();
});

async function put(id: string, status: string): Promise<void> {
  await client.send(new PutItemCommand({ TableName: TABLE, Item: { id: { S: id }, status: { S: status } } }));
}

/** What a poll handed over: each record as `<event> <id> <status>`, in the order received. */
function collector() {
  const changes: string[] = [];
  return {
    changes,
    async handler(records: StreamRecord[]) {
      for (const record of records) {
        changes.push(
          `${record.eventName} ${record.dynamodb?.Keys?.id?.S} ${record.dynamodb?.NewImage?.status?.S ?? '-'}`,
        );
      }
    },
  };
}

describe('LocalStreamFeed', () => {
  it('hands every change to the handler once, in stream order, then only the changes made since', async () => {
    const feed = new LocalStreamFeed(streams, TABLE);
    const first = collector();
    const second = collector();
    const third = collector();
    const a = `a-${randomUUID()}`;
    const b = `b-${randomUUID()}`;
    await put(a, 'INPROGRESS');
    await put(b, 'INPROGRESS');
    await put(a, 'COMPLETED');

    const firstCount = await feed.poll(first.handler);
    const secondCount = await feed.poll(second.handler);
    await put(b, 'COMPLETED');
    const thirdCount = await feed.poll(third.handler);

    expect(first.changes).toEqual([`INSERT ${a} INPROGRESS`, `INSERT ${b} INPROGRESS`, `MODIFY ${a} COMPLETED`]);
    expect(firstCount).toBe(3);
    expect([second.changes, secondCount]).toEqual([[], 0]);
    expect([third.changes, thirdCount]).toEqual([[`MODIFY ${b} COMPLETED`], 1]);
  });

  it('hands a page again when its handler threw (at least once), and moves past it once the handler resolved', async () => {
    const feed = new LocalStreamFeed(streams, TABLE);
    await feed.poll(async () => undefined); // past the earlier test's changes
    const c = `c-${randomUUID()}`;
    await put(c, 'INPROGRESS');
    const retried = collector();
    const after = collector();

    const failing = feed.poll(async () => {
      throw new Error('the queue refused the rechecks');
    });
    await expect(failing).rejects.toThrow('the queue refused the rechecks');
    const retriedCount = await feed.poll(retried.handler);
    const afterCount = await feed.poll(after.handler);

    expect([retried.changes, retriedCount]).toEqual([[`INSERT ${c} INPROGRESS`], 1]);
    expect([after.changes, afterCount]).toEqual([[], 0]);
  });

  it('starts a new feed from the trim horizon: its positions live in memory only', async () => {
    const earlier = new LocalStreamFeed(streams, TABLE);
    await earlier.poll(async () => undefined);
    const fresh = collector();

    const count = await new LocalStreamFeed(streams, TABLE).poll(fresh.handler);

    expect(count).toBeGreaterThanOrEqual(5); // every change the earlier tests made
    expect(count).toBe(fresh.changes.length);
    expect(fresh.changes[0]).toMatch(/^INSERT a-/);
  });

  it('reads a large backlog in pages, each handed over on its own', async () => {
    const pageSizes: number[] = [];
    const feed = new LocalStreamFeed(streams, TABLE);
    await feed.poll(async () => undefined);
    for (let i = 0; i < 1_200; i += 100) {
      await Promise.all(Array.from({ length: 100 }, (_, j) => put(`bulk-${i + j}-${randomUUID()}`, 'INPROGRESS')));
    }

    const count = await feed.poll(async (records) => {
      pageSizes.push(records.length);
    });

    expect(count).toBe(1_200);
    expect(pageSizes.length).toBeGreaterThan(1);
    expect(pageSizes.reduce((sum, size) => sum + size, 0)).toBe(1_200);
    expect(Math.max(...pageSizes)).toBeLessThanOrEqual(1_000); // GetRecords' page limit
  });
});
