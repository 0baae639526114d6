/**
 * What a table is, for the idempotency table and an app's own: the schema the construct (`definedTable`),
 * the local runner and the test store build them from, so a key changed here changes everywhere. Plain
 * data only: no SDK or CDK import, so every consumer can load it without pulling the other's dependencies.
 */
import { DEFAULT_IDEMPOTENCY_TABLE_NAME, DEFAULT_RECORD_ATTRIBUTES } from '../idempotency/protocol/record';

/** A key attribute: DynamoDB only allows string, number or binary keys; retrysafe uses strings. */
export interface KeyAttribute {
  readonly name: string;
  readonly type: 'S';
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

/** The idempotency table's definition: its schema, and where its name comes from at run time. */
export interface TableDefinition extends Omit<TableSchema, 'defaultName'> {
  /** Environment variable that names the table at run time (set by the construct, the runner, the tests). */
  readonly envVar: string;
  /** Table name used when the environment variable is not set (local runs and tests). */
  readonly defaultName: string;
}

/** The runtime's own table: call records and intents, with a TTL and the stream the completer reads. */
export const IDEMPOTENCY_TABLE = {
  envVar: 'IDEMPOTENCY_TABLE',
  defaultName: DEFAULT_IDEMPOTENCY_TABLE_NAME,
  partitionKey: { name: DEFAULT_RECORD_ATTRIBUTES.key, type: 'S' },
  ttlAttribute: DEFAULT_RECORD_ATTRIBUTES.expiry,
  // The completer reads it to find claims that never got a result: no index write on any call.
  stream: 'NEW_IMAGE',
} as const satisfies TableDefinition;

/** The idempotency table's name in this environment: `IDEMPOTENCY_TABLE`, else its default name. */
export function idempotencyTableName(env: NodeJS.ProcessEnv = process.env): string {
  return env[IDEMPOTENCY_TABLE.envVar] || IDEMPOTENCY_TABLE.defaultName;
}

/** An app table's name at run time: `<NAME>_TABLE`, else its schema's `defaultName`, else its name. */
export function appTableName(name: string, schema: TableSchema, env: NodeJS.ProcessEnv = process.env): string {
  return env[tableEnvVar(name)] || schema.defaultName || name;
}
