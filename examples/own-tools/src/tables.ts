import type { TableSchema } from 'retrysafe/testing';

/**
 * The app's tables, by the names its tools' `access` uses: one definition for the CDK app (`definedTable`),
 * the tests (`startTestStore`), `retrysafe dev` and tenant erase (`eraseEntry`, `retrysafe erase`).
 */
export const TABLES = {
  /** One account per (tenant, external id): the natural key of `open_account`. */
  accounts: {
    partitionKey: { name: 'tenant', type: 'S' },
    sortKey: { name: 'external_id', type: 'S' },
    // Tenant erase finds a tenant's accounts with one Query, and keeps one a call in flight opened.
    tenantAttribute: 'tenant',
    callStamps: ['opened_by'],
  },
  /** One logged call per (tenant, call id); the id is derived from the call's downstream key. */
  calls: {
    partitionKey: { name: 'tenant', type: 'S' },
    sortKey: { name: 'call_id', type: 'S' },
    tenantAttribute: 'tenant',
    callStamps: ['logged_by'],
  },
} as const satisfies Record<string, TableSchema>;
