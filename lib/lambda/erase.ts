import type { Context } from 'aws-lambda';
import { parseEraseRequest } from '../admin/erase-request';
import { type ErasableTables, type ErasureReport, eraseTenant } from '../admin/erase-tenant';
import { withInvocationDeadline } from '../store/deadline';
import { processServices } from './core-services';

/**
 * Tenant erase, for operators: invoked directly (`{"tenant":"acme","dryRun":true}`), never routed. It
 * erases the tenant's idempotency records; `includeDomain` also erases the tenant's items in the app's
 * own `tables` (the same schemas its CDK app and tests build them from: each declares its
 * `tenantAttribute` and `callStamps`, or `keptByErase`). Grant it `eraseAccessOf(tables)`.
 */
export function eraseEntry(
  tables: ErasableTables = {},
  env: NodeJS.ProcessEnv = process.env,
): (event: unknown, context: Context) => Promise<ErasureReport> {
  const core = processServices(env);
  return async function erase(event, context) {
    const request = parseEraseRequest(event);
    // Bounded by the invocation's deadline; a run cut short is resumed by running it again.
    const report = await withInvocationDeadline(context, () => eraseTenant(core.client, request, env, tables));
    core.logger.info('tenant erase', { ...report });
    return report;
  };
}
