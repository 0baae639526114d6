import { eraseEntry } from 'retrysafe/lambda/erase';
import { TABLES } from '../app/tables';

/**
 * Tenant erase, for operators: invoked directly (`aws lambda invoke --payload '{"tenant":"acme",
 * "includeDomain":true,"dryRun":true}'`), never routed through the public API. The package's generic
 * erase over the example's tables, as their schemas declare it (the ledger is kept).
 */
export const handler = eraseEntry(TABLES);
