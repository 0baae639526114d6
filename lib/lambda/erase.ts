import type { Context } from 'aws-lambda';
import { parseEraseRequest } from '../admin/erase-request';
import { type EraseScope, type ErasureReport, eraseTenant, RECORDS_ONLY_ERASE_SCOPE } from '../admin/erase-tenant';
import { withInvocationDeadline } from '../store/deadline';
import { processServices } from './core-services';

/**
 * Tenant erase, for operators: invoked directly (`{"tenant":"acme","dryRun":true}`), never routed. It
 * erases the tenant's idempotency records; `includeDomain` also erases the domain tables `scope` names.
 */
export function eraseEntry(
  scope: EraseScope = RECORDS_ONLY_ERASE_SCOPE,
  env: NodeJS.ProcessEnv = process.env,
): (event: unknown, context: Context) => Promise<ErasureReport> {
  const core = processServices(env);
  return async function erase(event, context) {
    const request = parseEraseRequest(event);
    // Bounded by the invocation's deadline; a run cut short is resumed by running it again.
    const report = await withInvocationDeadline(context, () => eraseTenant(core.client, request, env, scope));
    core.logger.info('tenant erase', { ...report });
    return report;
  };
}
