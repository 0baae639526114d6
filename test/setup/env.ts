import { TABLES } from '../../app/tables';
import { applyLocalDefaults } from '../../lib/local/local-env';

// Every suite talks to the DynamoDB Local that global-setup started. Logs and metric lines stay quiet
// unless a test asks for them (test/integration/metrics.test.ts does).
applyLocalDefaults(process.env, 'SILENT', TABLES);
process.env.POWERTOOLS_METRICS_DISABLED ??= 'true';
