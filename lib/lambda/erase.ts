import type { Context } from 'aws-lambda';
import { parseEraseRequest } from '../admin/erase-request';
import { type ErasableTables, type ErasingTools, type ErasureReport, eraseTenant } from '../admin/erase-tenant';
import { withInvocationDeadline } from '../store/deadline';
import { processServices } from './core-services';

/**
 * Tenant erase, for operators: invoked directly (`{"tenant":"acme","dryRun":true}`), never routed. It
 * erases the tenant's idempotency records; `includeDomain` also erases the tenant's items in the app's
 * own `tables` (the same schemas its CDK app and tests build them from: each declares its
 * `tenantAttribute` and `callStamps`, or `keptByErase`). Grant it `eraseAccessOf(tables)`.
 *
 * `tools` (the app's tool list: only each tool's `name` and `access` are read) lets an app table wait
 * only for the calls in flight whose tools access it; without it, every call in flight holds back every
 * app table. The answer is the report: `complete: false` when something was left for later, with
 * `deferred` (what, by table) and `retryAfter` (when to invoke it again, ISO 8601).
 */
export function eraseEntry(
  tables: ErasableTables = {},
  env: NodeJS.ProcessEnv = process.env,
  tools?: ErasingTools,
): (event: unknown, context: Context) => Promise<ErasureReport> {
  const core = processServices(env);
  return async function erase(event, context) {
    const request = parseEraseRequest(event);
    // Bounded by the invocation's deadline; a run cut short is resumed by running it again.
    const report = await withInvocationDeadline(context, () => eraseTenant(core.client, request, env, tables, tools));
    core.logger.info('tenant erase', { ...report });
    return report;
  };
}
