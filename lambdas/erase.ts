import { eraseEntry } from 'retrysafe/lambda/erase';
import { TABLES } from '../app/tables';
import { TOOLS } from '../app/tools';

/**
 * Tenant erase, for operators: invoked directly (`aws lambda invoke --payload '{"tenant":"acme",
 * "includeDomain":true,"dryRun":true}'`), never routed through the public API. The package's generic
 * erase over the example's tables, as their schemas declare it (the ledger is kept); a table waits only
 * for the calls in flight whose tools access it.
 */
export const handler = eraseEntry(TABLES, process.env, TOOLS);
