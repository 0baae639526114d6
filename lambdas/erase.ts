import type { Context } from 'aws-lambda';
import { parseEraseRequest } from '../lib/admin/erase-request';
import { eraseTenant } from '../lib/admin/erase-tenant';
import { withInvocationDeadline } from '../lib/store/deadline';
import { services } from './shared/process';

/**
 * Tenant erase, for operators: invoked directly (`aws lambda invoke --payload '{"tenant":"acme",
 * "includeDomain":true,"dryRun":true}'`), never routed through the public API.
 */
export async function handler(event: unknown, context: Context) {
  const request = parseEraseRequest(event);
  // Bounded by the invocation's deadline; a run cut short is resumed by running it again.
  const report = await withInvocationDeadline(context, () => eraseTenant(services.client, request));
  services.logger.info('tenant erase', { ...report });
  return report;
}
