import { DescribeTableCommand, ListTablesCommand } from '@aws-sdk/client-dynamodb';
import { QueryCommand } from '@aws-sdk/lib-dynamodb';
import { Outbox } from '../../app/domain/outbox';
import { TABLES } from '../../app/tables';
import type { CoreServices } from '../../lib/lambda';
import { newTenant, startTestStore, type TestStore } from '../../lib/testing';
import { sendReminder } from '../fixtures/tools/send-reminder';

/** The fixture tool's services, composed the way its Lambda entry would compose them: from the table names. */
function reminderServices({ documents, tableName }: CoreServices) {
  return { outbox: new Outbox(documents, tableName('outbox')) };
}

let store: TestStore;
beforeAll(async () => {
  store = await startTestStore({ endpoint: process.env.DYNAMODB_ENDPOINT, tables: { outbox: TABLES.outbox } });
});
afterAll(() => store.stop());

/** What the tool really did: the tenant's items in the outbox table. */
async function outboxItems(tenant: string) {
  const page = await store.core.documents.send(
    new QueryCommand({
      TableName: store.env.OUTBOX_TABLE,
      KeyConditionExpression: 'tenant = :tenant',
      ExpressionAttributeValues: { ':tenant': tenant },
      ConsistentRead: true,
    }),
  );
  return page.Items ?? [];
}

describe('retrysafe/testing, on a tool of the tests’ own (as an app tests its tools)', () => {
  it('runs a first call, a replay and a conflict through the real runtime; the tool acted once', async () => {
    // Prepare
    const reminder = store.tool(sendReminder, reminderServices);
    const args = { idempotency_key: 'k1', to: 'ada@example.com', text: 'pay invoice 7' };

    // Act
    const first = await reminder.call(args);
    const replay = await reminder.call(args);
    const conflict = await reminder.call({ ...args, text: 'other' });

    // Assess
    expect(first).toMatchObject({ ok: true, idempotent: false, key: 'k1', receipt: { to: 'ada@example.com' } });
    expect(replay).toEqual({ ...first, idempotent: true });
    expect(conflict).toMatchObject({ ok: false, error: { code: 'conflict' } });
    expect(await outboxItems(reminder.caller.tenant)).toHaveLength(1);
  });

  it('survives a worker that dies after the effect: pending while locked, then one effect and one receipt', async () => {
    const caller = { tenant: newTenant(), user: 'ada' };
    const reminder = store.tool(sendReminder, reminderServices);

    const { whileLocked, retry, replay } = await reminder.crashAndRetry(
      { idempotency_key: 'k1', to: 'ada@example.com', text: 'hello' },
      caller,
    );

    expect(whileLocked).toMatchObject({ ok: false, status: 'pending', key: 'k1' });
    expect(retry).toMatchObject({ ok: true, key: 'k1' });
    expect(replay).toEqual({ ...retry, idempotent: true });
    const items = await outboxItems(caller.tenant);
    expect(items).toHaveLength(1);
    if (!retry.ok) throw new Error('unreachable');
    expect(retry.receipt.reminder_id).toBe(items[0]!.message_id);
  });

  it('names each of the app’s tables in the environment an entry point reads (<NAME>_TABLE)', () => {
    expect(store.env).toMatchObject({
      IDEMPOTENCY_TABLE: 'retrysafe-idempotency',
      OUTBOX_TABLE: TABLES.outbox.defaultName,
      DYNAMODB_ENDPOINT: process.env.DYNAMODB_ENDPOINT,
    });
    expect(store.core.tableName('outbox')).toBe(TABLES.outbox.defaultName);
    expect(() => store.core.tableName('nowhere')).toThrow('NOWHERE_TABLE is not set');
  });
});

describe('startTestStore without an endpoint', () => {
  it('starts its own DynamoDB Local with the app’s tables from their schemas, and stops it', async () => {
    const own = await startTestStore({
      tables: {
        'crm-contacts': { partitionKey: { name: 'tenant', type: 'S' }, sortKey: { name: 'email', type: 'S' } },
      },
    });
    let stopped = false;
    try {
      const tables = await own.core.client.send(new ListTablesCommand({}));
      const contacts = await own.core.client.send(new DescribeTableCommand({ TableName: 'crm-contacts' }));

      expect(tables.TableNames?.sort()).toEqual(['crm-contacts', 'retrysafe-idempotency']);
      expect(own.env.CRM_CONTACTS_TABLE).toBe('crm-contacts');
      expect(contacts.Table?.KeySchema).toEqual([
        { AttributeName: 'tenant', KeyType: 'HASH' },
        { AttributeName: 'email', KeyType: 'RANGE' },
      ]);
      expect(own.endpoint).not.toBe(process.env.DYNAMODB_ENDPOINT);
      await own.stop();
      stopped = true;
      await expect(fetch(own.endpoint)).rejects.toThrow();
    } finally {
      if (!stopped) await own.stop();
    }
  }, 60_000);
});

// Found by the review of issue 15: the harness hung (never failed) here.
describe('crashAndRetry when the dying worker does not execute', () => {
  // The harness waits for the first worker's execute to finish its effect; if that worker's call is a
  // replay (the harness's default caller reused with a key a previous `call` used), or its execute
  // throws (a business error), the promise never settles: the test times out with no message instead
  // of failing with one.
  it('answers (or rejects) within 5 s when the key was already used by a call of the same harness', async () => {
    const { startTestStore } = await import('../../lib/testing/test-store');
    const store = await startTestStore({
      endpoint: process.env.DYNAMODB_ENDPOINT!,
      tables: {
        outbox: {
          partitionKey: TABLES.outbox.partitionKey,
          sortKey: TABLES.outbox.sortKey,
          defaultName: `harness-outbox-${Date.now()}`,
        },
      },
    });
    try {
      const { Outbox } = await import('../../app/domain/outbox');
      const tool = store.tool(sendReminder, ({ documents, tableName }) => ({
        outbox: new Outbox(documents, tableName('outbox')),
      }));
      const args = { idempotency_key: 'k1', to: 'ada@example.com', text: 'hi' };
      expect(await tool.call(args)).toMatchObject({ ok: true, idempotent: false });

      const settled = await Promise.race([
        tool.crashAndRetry(args).then(
          () => 'answered',
          () => 'rejected',
        ),
        new Promise((resolve) => setTimeout(() => resolve('still waiting after 5 s'), 5_000)),
      ]);
      expect(settled).not.toBe('still waiting after 5 s');
    } finally {
      await store.stop();
    }
  }, 20_000);
});
