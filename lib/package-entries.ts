/**
 * The package's public entry points, as plain data: each built file (`dist/<name>.mjs`, `.cjs`, and
 * their declarations) and the source it is built from. The build (`tsdown.config.ts`) reads it, and
 * `package.json`'s `exports` names the built files (test/package/exports.test.ts keeps the two equal).
 */
export const PACKAGE_ENTRIES = {
  index: 'lib/idempotency/index.ts',
  'idempotency/definition': 'lib/idempotency/definition.ts',
  'idempotency/errors': 'lib/idempotency/errors.ts',
  'idempotency/record': 'lib/idempotency/protocol/record.ts',
  'idempotency/powertools': 'lib/idempotency/powertools.ts',
  'tools/index': 'lib/tools/index.ts',
  'tools/dynamodb': 'lib/tools/dynamodb.ts',
  'client/index': 'lib/client/index.ts',
  'client/openai': 'lib/client/openai.ts',
  'client/anthropic': 'lib/client/anthropic.ts',
  'client/ai-sdk': 'lib/client/ai-sdk.ts',
  'lambda/index': 'lib/lambda/index.ts',
  'lambda/tool': 'lib/lambda/tool.ts',
  'lambda/mcp': 'lib/lambda/mcp.ts',
  'lambda/completer': 'lib/lambda/completer.ts',
  'lambda/listing': 'lib/lambda/listing.ts',
  'lambda/read': 'lib/lambda/read.ts',
  'lambda/erase': 'lib/lambda/erase.ts',
  'testing/index': 'lib/testing/index.ts',
  'cdk/index': 'lib/infra/index.ts',
  config: 'lib/dev/config.ts',
  // The `retrysafe` command (package.json `bin`); not a subpath of `exports`.
  cli: 'lib/cli/bin.ts',
  // The construct's own entry files (health, not_found, get_operation, erase, the AgentCore Gateway's
  // request interceptor), bundled for the app's
  // functions from here (`packageEntryFile`); not a subpath of `exports`. Built to dist/lambdas/.
  'lambdas/health': 'lib/lambda/entries/health.ts',
  'lambdas/not_found': 'lib/lambda/entries/not_found.ts',
  'lambdas/get_operation': 'lib/lambda/entries/get_operation.ts',
  'lambdas/erase_records': 'lib/lambda/entries/erase_records.ts',
  'lambdas/agentcore_interceptor': 'lib/lambda/entries/agentcore_interceptor.ts',
} as const;

/** Each public subpath of `exports` and the entry it loads. */
export const PACKAGE_SUBPATHS = {
  '.': 'index',
  './idempotency': 'index',
  './idempotency/definition': 'idempotency/definition',
  './idempotency/errors': 'idempotency/errors',
  './idempotency/record': 'idempotency/record',
  './idempotency/powertools': 'idempotency/powertools',
  './tools': 'tools/index',
  './tools/dynamodb': 'tools/dynamodb',
  './client': 'client/index',
  './client/openai': 'client/openai',
  './client/anthropic': 'client/anthropic',
  './client/ai-sdk': 'client/ai-sdk',
  './lambda': 'lambda/index',
  './lambda/tool': 'lambda/tool',
  './lambda/mcp': 'lambda/mcp',
  './lambda/completer': 'lambda/completer',
  './lambda/listing': 'lambda/listing',
  './lambda/read': 'lambda/read',
  './lambda/erase': 'lambda/erase',
  './testing': 'testing/index',
  './cdk': 'cdk/index',
  './config': 'config',
} as const satisfies Record<string, keyof typeof PACKAGE_ENTRIES>;
