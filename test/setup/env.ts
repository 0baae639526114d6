import { applyLocalDefaults } from '../../lib/local/local-env';

// Every suite talks to the DynamoDB Local that global-setup started. Logs stay quiet unless a test
// asks for them.
applyLocalDefaults(process.env, 'SILENT');
