import { parseEraseRequest } from '../lib/admin/erase-request';
import { eraseTenant } from '../lib/admin/erase-tenant';
import { services } from './shared/process';

/**
 * Tenant erase, for operators: invoked directly (`aws lambda invoke --payload '{"tenant":"acme",
 * "includeDomain":true,"dryRun":true}'`), never routed through the public API.
 */
export async function handler(event: unknown) {
  const request = parseEraseRequest(event);
  const report = await eraseTenant(services.client, request);
  services.logger.info('tenant erase', { ...report });
  return report;
}
