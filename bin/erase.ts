/**
 * `npm run erase -- --tenant T [--include-domain] [--dry-run]`: erases one tenant's idempotency records
 * (and with --include-domain its invoices, tickets and outbox items; the ledger is kept) in the DynamoDB
 * that `DYNAMODB_ENDPOINT` names, or the AWS account's tables when it is unset. The same function the
 * stack's admin Lambda runs. Prints counts per table; safe to run again.
 */
import { parseArgs } from 'node:util';
import { parseEraseRequest } from '../lib/admin/erase-request';
import { eraseTenant } from '../lib/admin/erase-tenant';
import { applyLocalDefaults } from '../lib/local/local-env';
import { createDynamoDBClient } from '../lib/store/client';

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      tenant: { type: 'string' },
      'include-domain': { type: 'boolean', default: false },
      'dry-run': { type: 'boolean', default: false },
    },
  });
  if (process.env.DYNAMODB_ENDPOINT) applyLocalDefaults(process.env);
  const request = parseEraseRequest({
    tenant: values.tenant,
    includeDomain: values['include-domain'],
    dryRun: values['dry-run'],
  });
  const client = createDynamoDBClient(process.env);
  try {
    const report = await eraseTenant(client, request);
    console.log(`tenant ${report.tenant}${report.dryRun ? ' (dry run: nothing deleted)' : ''}`);
    for (const [table, counts] of Object.entries(report.tables)) {
      console.log(
        `  ${table.padEnd(12)} found ${counts.found}, deleted ${counts.deleted}, in flight (kept) ${counts.inFlight}, read units ${counts.readUnits}`,
      );
    }
    for (const [table, why] of Object.entries(report.kept)) console.log(`  ${table.padEnd(12)} kept: ${why}`);
    const found = Object.values(report.tables).reduce((sum, counts) => sum + counts.found, 0);
    if (found === 0) console.log('  nothing to erase (already erased, or no such tenant)');
  } finally {
    client.destroy();
  }
}

main().catch((error) => {
  console.error(error instanceof Error ? error.message : error);
  process.exit(1);
});
