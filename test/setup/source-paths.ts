import Module from 'node:module';
import { join } from 'node:path';
import { compilerOptions } from '../../tsconfig.json';

/**
 * `retrysafe/…` as the sources, for the code Jest runs outside its module registry (the global setup and
 * teardown): tsconfig.json's `paths`, which Jest's `moduleNameMapper`, tsx and esbuild all read, while
 * Node alone would resolve the package's own name to its build (dist/, maybe stale or absent).
 */
const ROOT = join(__dirname, '..', '..');
const paths = compilerOptions.paths as Readonly<Record<string, readonly string[]>>;
const resolving = Module as unknown as { _resolveFilename(request: string, ...rest: unknown[]): string };
const resolve = resolving._resolveFilename;
resolving._resolveFilename = function resolveSource(request, ...rest) {
  const source = paths[request]?.[0];
  return resolve.call(this, source === undefined ? request : join(ROOT, source), ...rest);
};
