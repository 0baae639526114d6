import { IDEMPOTENCY_TABLE, type TableSchema, tableEnvVar } from '../store/tables';

/**
 * Defaults for running against DynamoDB Local on this machine (npm start, the demo, the benchmark, the
 * tests): a region and placeholder credentials (DynamoDB Local accepts any), and the SDK's Node 22 notice
 * silenced (this machine runs Node 20; see README), the tables' names (the idempotency table's and the app's `tables`'). Values already set are kept.
 */
export function applyLocalDefaults(
  env: NodeJS.ProcessEnv = process.env,
  logLevel = 'WARN',
  tables: Readonly<Record<string, TableSchema>> = {},
): void {
  env.AWS_REGION ||= 'us-east-1';
  env.AWS_ACCESS_KEY_ID ||= 'local';
  env.AWS_SECRET_ACCESS_KEY ||= 'local';
  env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ||= 'true';
  env.POWERTOOLS_LOG_LEVEL ||= logLevel;
  // Each table's name where the construct would set it (`<NAME>_TABLE`): the entry points read it.
  env[IDEMPOTENCY_TABLE.envVar] ||= IDEMPOTENCY_TABLE.defaultName;
  for (const [name, schema] of Object.entries(tables)) env[tableEnvVar(name)] ||= schema.defaultName || name;
}
