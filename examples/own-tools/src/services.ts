import type { CoreServices } from 'retrysafe/lambda';
import { AccountStore, CallLog } from './stores';

/**
 * The app's services, composed once per process from the core services: every entry point (each tool's,
 * the MCP one, the completer) and every test passes this same function. Table names come from the
 * environment the construct (or the test store) sets, by the names in the tools' `access`.
 */
export function services({ documents, tableName }: CoreServices) {
  return {
    accounts: new AccountStore(documents, tableName('accounts')),
    calls: new CallLog(documents, tableName('calls')),
  };
}

export type Services = ReturnType<typeof services>;
