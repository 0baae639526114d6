import { eraseEntry } from '../erase';

/**
 * Tenant erase of an app without domain tables to erase: its idempotency records only. The package ships
 * it as `Retrysafe`'s default `erase` entry (this repository's example uses `lambdas/erase.ts`, which
 * also erases its invoices, tickets and outbox).
 */
export const handler = eraseEntry();
