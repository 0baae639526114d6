/**
 * The example's own tables, by the names its tools' `access` uses: the one definition its CDK stack
 * (app/stack.ts, `definedTable`), `retrysafe dev` (retrysafe.config.ts) and the tests build them from.
 * Each says where the tenant is for tenant erase (`tenantAttribute`), which attributes stamp the call that
 * wrote an item (`callStamps`), or why erase keeps it (`keptByErase`).
 */
import { DEFAULT_IDEMPOTENCY_TABLE_NAME } from 'retrysafe/idempotency/record';
import { type TableSchema, tableEnvVar } from 'retrysafe/lambda';

export const TABLES = {
  invoices: {
    defaultName: 'retrysafe-invoices',
    partitionKey: { name: 'tenant', type: 'S' },
    sortKey: { name: 'invoice_id', type: 'S' },
    tenantAttribute: 'tenant',
    callStamps: ['created_by', 'refunded_by'],
  },
  tickets: {
    defaultName: 'retrysafe-tickets',
    partitionKey: { name: 'tenant', type: 'S' },
    sortKey: { name: 'ticket_key', type: 'S' },
    tenantAttribute: 'tenant',
    callStamps: ['created_by', 'closed_by'],
  },
  outbox: {
    defaultName: 'retrysafe-outbox',
    // One item per message id: an email is queued once and delivered once, however often it is sent.
    partitionKey: { name: 'tenant', type: 'S' },
    sortKey: { name: 'message_id', type: 'S' },
    tenantAttribute: 'tenant',
    // Email bodies are personal data: erased with the tenant.
    callStamps: ['created_by', 'delivered_by'],
  },
  ledger: {
    defaultName: 'retrysafe-ledger',
    // One item per provider idempotency key: the provider's own guard against moving money twice.
    partitionKey: { name: 'provider_key', type: 'S' },
    keptByErase: 'money movements are kept: the provider record',
  },
} as const satisfies Record<string, TableSchema>;

/** The example's tables, by name. */
export type TableId = keyof typeof TABLES;

/**
 * A table's name in this environment: `<NAME>_TABLE` (what the construct, `retrysafe dev` and the test
 * store set), else its default name — the idempotency table's too.
 */
export function tableName(id: TableId | 'idempotency', env: NodeJS.ProcessEnv = process.env): string {
  const variable = id === 'idempotency' ? 'IDEMPOTENCY_TABLE' : tableEnvVar(id);
  return env[variable] || (id === 'idempotency' ? DEFAULT_IDEMPOTENCY_TABLE_NAME : TABLES[id].defaultName);
}
