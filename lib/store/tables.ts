/**
 * The one definition of every DynamoDB table retrysafe uses.
 *
 * The test set-up, the local runner and the CDK stack all build their tables from this data, so a key
 * or index changed here changes everywhere. Plain data only: no SDK or CDK import, so every consumer
 * can load it without pulling the other's dependencies.
 */
import { DEFAULT_IDEMPOTENCY_TABLE_NAME, DEFAULT_RECORD_ATTRIBUTES } from '../idempotency/record';

/** A key attribute: DynamoDB only allows string, number or binary keys; retrysafe uses strings. */
export interface KeyAttribute {
  readonly name: string;
  readonly type: 'S';
}

export interface GlobalSecondaryIndexDefinition {
  readonly indexName: string;
  readonly partitionKey: KeyAttribute;
  readonly sortKey?: KeyAttribute;
  /** Only keys are projected: the index exists to find items, not to read receipts from. */
  readonly projection: 'KEYS_ONLY';
}

/**
 * What a table is: its keys, TTL and stream. An app's own tables are described so (`retrysafe/testing`
 * creates them on DynamoDB Local from it, `definedTable` in `retrysafe/cdk` on AWS).
 */
export interface TableSchema {
  readonly partitionKey: KeyAttribute;
  readonly sortKey?: KeyAttribute;
  /** Attribute holding the DynamoDB TTL, in epoch seconds. */
  readonly ttlAttribute?: string;
  /** The table's change stream, if it has one (the idempotency table's feeds the completer). */
  readonly stream?: 'NEW_IMAGE';
  /**
   * The table's name where nothing names it (local runs and tests).
   * @default the table's name in the app (`contacts`)
   */
  readonly defaultName?: string;
  /**
   * Where a tenant's items are, for tenant erase (`retrysafe erase`, the erase function): the attribute
   * the tools write `identity.tenant` to. The partition key: erase finds a tenant's items with one Query;
   * any other attribute: a Scan of the whole table, filtered on it (the report counts its read units).
   * @default undefined — erase does not reach the table, and says so (declare `keptByErase` to say why)
   */
  readonly tenantAttribute?: string;
  /**
   * The item's call stamps: the attributes the tools write a call's `callId` to when it commits to the
   * item (`created_by`, `refunded_by`). An item a call still in flight stamped is kept by erase (that
   * call may write it again); every other item is deleted on the stamps it was read with, so a commit
   * that lands meanwhile keeps it.
   * @default [] — items are deleted on their key alone
   */
  readonly callStamps?: readonly string[];
  /**
   * Why tenant erase keeps this table on purpose (`'money movements are the provider record'`). Excludes
   * `tenantAttribute`.
   * @default undefined
   */
  readonly keptByErase?: string;
}

/**
 * The environment variable that carries the name of the app's table `name` at run time: `<NAME>_TABLE`
 * (`invoices` → `INVOICES_TABLE`, `crm-contacts` → `CRM_CONTACTS_TABLE`). The stack and the construct set
 * one for every table, the test store too; an entry point reads it to compose its services.
 */
export function tableEnvVar(name: string): string {
  return `${name.toUpperCase().replace(/[^A-Z0-9]/g, '_')}_TABLE`;
}

export interface TableDefinition extends Omit<TableSchema, 'defaultName'> {
  /** Environment variable that names the table at run time (set by the stack, the runner, the tests): `tableEnvVar(id)`. */
  readonly envVar: string;
  /** Table name used when the environment variable is not set (local runs and tests). */
  readonly defaultName: string;
  readonly partitionKey: KeyAttribute;
  readonly sortKey?: KeyAttribute;
  /** Attribute holding the DynamoDB TTL, in epoch seconds. */
  readonly ttlAttribute?: string;
  readonly globalSecondaryIndexes?: readonly GlobalSecondaryIndexDefinition[];
  /** The table's change stream, if it has one (the idempotency table's feeds the completer). */
  readonly stream?: 'NEW_IMAGE';
}

/**
 * Attribute names of an idempotency record in this app's table: the core's own layout, handed to the
 * idempotency runtime as its `attributes` option and used by tenant erase, so the table, the claims and
 * the erase always agree.
 */
export const IDEMPOTENCY_ATTRIBUTES = DEFAULT_RECORD_ATTRIBUTES;

export const TABLES = {
  idempotency: {
    envVar: 'IDEMPOTENCY_TABLE',
    defaultName: DEFAULT_IDEMPOTENCY_TABLE_NAME,
    partitionKey: { name: IDEMPOTENCY_ATTRIBUTES.key, type: 'S' },
    ttlAttribute: IDEMPOTENCY_ATTRIBUTES.expiry,
    // The completer reads it to find claims that never got a result: no index write on any call.
    stream: 'NEW_IMAGE',
  },
  invoices: {
    envVar: 'INVOICES_TABLE',
    defaultName: 'retrysafe-invoices',
    partitionKey: { name: 'tenant', type: 'S' },
    sortKey: { name: 'invoice_id', type: 'S' },
    tenantAttribute: 'tenant',
    callStamps: ['created_by', 'refunded_by'],
  },
  tickets: {
    envVar: 'TICKETS_TABLE',
    defaultName: 'retrysafe-tickets',
    partitionKey: { name: 'tenant', type: 'S' },
    sortKey: { name: 'ticket_key', type: 'S' },
    tenantAttribute: 'tenant',
    callStamps: ['created_by', 'closed_by'],
  },
  outbox: {
    envVar: 'OUTBOX_TABLE',
    defaultName: 'retrysafe-outbox',
    // One item per message id: an email is queued once and delivered once, however often it is sent.
    partitionKey: { name: 'tenant', type: 'S' },
    sortKey: { name: 'message_id', type: 'S' },
    tenantAttribute: 'tenant',
    // Email bodies are personal data: erased with the tenant.
    callStamps: ['created_by', 'delivered_by'],
  },
  ledger: {
    envVar: 'LEDGER_TABLE',
    defaultName: 'retrysafe-ledger',
    // One item per provider idempotency key: the provider's own guard against moving money twice.
    partitionKey: { name: 'provider_key', type: 'S' },
    keptByErase: 'money movements are kept: the provider record',
  },
} as const satisfies Record<string, TableDefinition>;

export type TableId = keyof typeof TABLES;

/** The tables tools work on: every table but the idempotency table, which is the runtime's. */
export type DomainTableId = Exclude<TableId, 'idempotency'>;

/** The table name for `id` in this environment. */
export function tableName(id: TableId, env: NodeJS.ProcessEnv = process.env): string {
  const definition: TableDefinition = TABLES[id];
  return env[definition.envVar] || definition.defaultName;
}
