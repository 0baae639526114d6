import { QueryCommand } from '@aws-sdk/lib-dynamodb';
import { newTenant, startTestStore, type TestStore } from 'retrysafe/testing';
import { services } from '../src/services';
import { TABLES } from '../src/tables';
import { logCall } from '../src/tools/log-call';
import { openAccount } from '../src/tools/open-account';

let store: TestStore;
beforeAll(async () => {
  store = await startTestStore({ tables: TABLES });
});
afterAll(() => store.stop());

/** What the tools really wrote: a tenant's items in one of the app's tables. */
async function itemsOf(table: keyof typeof TABLES, tenant: string) {
  const page = await store.core.documents.send(
    new QueryCommand({
      TableName: store.core.tableName(table),
      KeyConditionExpression: 'tenant = :tenant',
      ExpressionAttributeValues: { ':tenant': tenant },
      ConsistentRead: true,
    }),
  );
  return page.Items ?? [];
}

describe('open_account (natural key external_id)', () => {
  it('opens once: a replay, and a new key for the same external id, both answer the first receipt', async () => {
    const tool = store.tool(openAccount, services);
    const args = { external_id: 'crm-42', name: 'Ada' };

    const first = await tool.call({ idempotency_key: 'k1', ...args });
    const replay = await tool.call({ idempotency_key: 'k1', ...args });
    const newKey = await tool.call({ idempotency_key: 'k2', ...args });

    expect(first).toMatchObject({ ok: true, idempotent: false, receipt: { external_id: 'crm-42', name: 'Ada' } });
    expect(replay).toEqual({ ...first, idempotent: true });
    expect(newKey).toMatchObject({ ok: true, idempotent: true, key: 'k2' });
    if (!first.ok || !newKey.ok) throw new Error('unreachable');
    expect(newKey.receipt).toEqual(first.receipt);
    expect(await itemsOf('accounts', tool.caller.tenant)).toHaveLength(1);
  });

  it('refuses other arguments under a key (conflict) and names the field it cannot take', async () => {
    const tool = store.tool(openAccount, services);

    await tool.call({ idempotency_key: 'k1', external_id: 'crm-7', name: 'Ada' });
    const conflict = await tool.call({ idempotency_key: 'k1', external_id: 'crm-7', name: 'Grace' });
    const invalid = await tool.call({ idempotency_key: 'k2', external_id: '', name: 'Ada' });

    expect(conflict).toMatchObject({ ok: false, error: { code: 'conflict' } });
    expect(invalid).toMatchObject({ ok: false, error: { code: 'invalid_args' } });
    if (invalid.ok || !('error' in invalid)) throw new Error('unreachable');
    expect(invalid.error.message).toMatch(/^external_id: /);
  });

  it('survives a worker that dies after opening the account: one account, the retry says it executed', async () => {
    const caller = { tenant: newTenant(), user: 'ada' };
    const tool = store.tool(openAccount, services);

    // The harness fails unless exactly one answer says idempotent: false, and the account was opened once.
    const { whileLocked, retry, replay } = await tool.crashAndRetry(
      { idempotency_key: 'k1', external_id: 'crm-9', name: 'Ada' },
      caller,
      { effects: async () => (await itemsOf('accounts', caller.tenant)).length },
    );

    expect(whileLocked).toMatchObject({ ok: false, status: 'pending' });
    expect(retry).toMatchObject({ ok: true, idempotent: false, receipt: { external_id: 'crm-9' } });
    expect(replay).toEqual({ ...retry, idempotent: true });
    expect(await itemsOf('accounts', caller.tenant)).toHaveLength(1);
  });
});

describe('log_call (client key only)', () => {
  it('logs once per key: a replay answers the same receipt, a new key logs a new call', async () => {
    const tool = store.tool(logCall, services);

    const first = await tool.call({ idempotency_key: 'k1', summary: 'Discussed pricing' });
    const replay = await tool.call({ idempotency_key: 'k1', summary: 'Discussed pricing' });
    const conflict = await tool.call({ idempotency_key: 'k1', summary: 'Something else' });
    const another = await tool.call({ idempotency_key: 'k2', summary: 'Discussed pricing' });

    expect(first).toMatchObject({ ok: true, idempotent: false });
    expect(replay).toEqual({ ...first, idempotent: true });
    expect(conflict).toMatchObject({ ok: false, error: { code: 'conflict' } });
    expect(another).toMatchObject({ ok: true, idempotent: false });
    expect(await itemsOf('calls', tool.caller.tenant)).toHaveLength(2);
  });

  it('survives a worker that dies after logging: one call logged, the retry says it executed, the replay answers it', async () => {
    const caller = { tenant: newTenant(), user: 'ada' };
    const tool = store.tool(logCall, services);

    const { whileLocked, retry, replay } = await tool.crashAndRetry(
      { idempotency_key: 'k1', summary: 'Signed' },
      caller,
      { effects: async () => (await itemsOf('calls', caller.tenant)).length },
    );

    expect(whileLocked).toMatchObject({ ok: false, status: 'pending' });
    expect(retry).toMatchObject({ ok: true, idempotent: false, receipt: { summary: 'Signed' } });
    expect(replay).toEqual({ ...retry, idempotent: true });
    const logged = await itemsOf('calls', caller.tenant);
    expect(logged).toHaveLength(1);
    if (!retry.ok) throw new Error('unreachable');
    expect(retry.receipt.call_id).toBe(logged[0]!.call_id);
  });
});
