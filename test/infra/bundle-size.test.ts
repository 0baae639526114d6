import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { build } from 'esbuild';
import { BUNDLE_BUDGET_BYTES, BUNDLING, FUNCTION_ACCESS } from '../../lib/infra/defaults';

const LAMBDAS = join(__dirname, '..', '..', 'lambdas');

/** Bundles an entry point exactly as the stack does and returns its size in bytes. */
async function bundledSize(entry: string): Promise<number> {
  const result = await build({
    entryPoints: [join(LAMBDAS, `${entry}.ts`)],
    bundle: true,
    platform: 'node',
    format: 'cjs',
    target: BUNDLING.target,
    minify: BUNDLING.minify,
    external: [...BUNDLING.externalModules],
    write: false,
    logLevel: 'silent',
  });
  return result.outputFiles.reduce((total, file) => total + file.contents.byteLength, 0);
}

describe('Lambda bundles', () => {
  const entries = Object.keys(FUNCTION_ACCESS);
  const sizes = new Map<string, number>();

  beforeAll(async () => {
    for (const entry of entries) sizes.set(entry, await bundledSize(entry));
    const rows = [...sizes].map(
      ([entry, bytes]) => `  ${entry.padEnd(16)} ${(bytes / 1024).toFixed(1).padStart(6)} KB`,
    );
    console.log(
      `bundle sizes (minified, without @aws-sdk/*; budget ${BUNDLE_BUDGET_BYTES / 1024} KB)\n${rows.join('\n')}`,
    );
  }, 60_000);

  it('deploys every entry point in lambdas/ (and only those)', () => {
    const files = readdirSync(LAMBDAS)
      .filter((file) => file.endsWith('.ts') && file !== 'index.ts')
      .map((file) => file.slice(0, -3));

    expect(files.sort()).toEqual([...entries].sort());
  });

  it.each(Object.keys(FUNCTION_ACCESS))('keeps %s within the bundle budget', (entry) => {
    expect(sizes.get(entry)).toBeLessThanOrEqual(BUNDLE_BUDGET_BYTES);
  });

  it('keeps reads that need no idempotency runtime free of Powertools idempotency and zod', () => {
    for (const entry of ['get_invoice', 'get_ticket', 'health', 'not_found']) {
      expect(sizes.get(entry)).toBeLessThan(40 * 1024);
    }
  });
});
