/**
 * The package's public entry points, as plain data: each built file (`dist/<name>.mjs`, `.cjs`, and
 * their declarations) and the source it is built from. The build (`tsdown.config.ts`) reads it, and
 * `package.json`'s `exports` names the built files (test/unit/package.test.ts keeps the two equal).
 */
export const PACKAGE_ENTRIES = {
  index: 'lib/idempotency/index.ts',
  'idempotency/definition': 'lib/idempotency/definition.ts',
  'idempotency/errors': 'lib/idempotency/errors.ts',
  'idempotency/record': 'lib/idempotency/record.ts',
  'tools/index': 'lib/tools/index.ts',
  'client/index': 'lib/client/index.ts',
  'client/openai': 'lib/client/openai.ts',
  'client/anthropic': 'lib/client/anthropic.ts',
  'client/ai-sdk': 'lib/client/ai-sdk.ts',
  'lambda/index': 'lib/lambda/index.ts',
  'testing/index': 'lib/testing/index.ts',
} as const;

/** Each public subpath of `exports` and the entry it loads. */
export const PACKAGE_SUBPATHS = {
  '.': 'index',
  './idempotency': 'index',
  './idempotency/definition': 'idempotency/definition',
  './idempotency/errors': 'idempotency/errors',
  './idempotency/record': 'idempotency/record',
  './tools': 'tools/index',
  './client': 'client/index',
  './client/openai': 'client/openai',
  './client/anthropic': 'client/anthropic',
  './client/ai-sdk': 'client/ai-sdk',
  './lambda': 'lambda/index',
  './testing': 'testing/index',
} as const satisfies Record<string, keyof typeof PACKAGE_ENTRIES>;
