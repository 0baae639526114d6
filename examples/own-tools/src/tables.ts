import type { TableSchema } from 'retrysafe/testing';

/**
 * The app's tables, by the names its tools' `access` uses: one definition for the CDK app (`definedTable`)
 * and the tests (`startTestStore`).
 */
export const TABLES = {
  /** One account per (tenant, external id): the natural key of `open_account`. */
  accounts: { partitionKey: { name: 'tenant', type: 'S' }, sortKey: { name: 'external_id', type: 'S' } },
  /** One logged call per (tenant, call id); the id is derived from the call's downstream key. */
  calls: { partitionKey: { name: 'tenant', type: 'S' }, sortKey: { name: 'call_id', type: 'S' } },
} as const satisfies Record<string, TableSchema>;
