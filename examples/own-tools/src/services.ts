import type { CoreServices } from 'retrysafe/lambda';
import { CrmClient } from './crm/client';
import { AccountStore, CallLog } from './stores';

/**
 * The app's services, composed once per process from the core services: every entry point (each tool's,
 * the MCP one, the completer), `retrysafe dev` (retrysafe.config.ts) and every test pass this same function. Table names come from the
 * environment the construct (or the test store) sets, by the names in the tools' `access`.
 */
export function services({ documents, tableName }: CoreServices) {
  return {
    accounts: new AccountStore(documents, tableName('accounts')),
    calls: new CallLog(documents, tableName('calls')),
    // The CRM's API: CRM_URL where push_contact runs (its needs in bin/app.ts), a local fake in the tests.
    crm: new CrmClient(process.env.CRM_URL ?? 'http://127.0.0.1:9'),
  };
}

export type Services = ReturnType<typeof services>;
