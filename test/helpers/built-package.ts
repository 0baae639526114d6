import { execFile } from 'node:child_process';
import { copyFileSync, cpSync, mkdtempSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';

const ROOT = join(__dirname, '..', '..');

/**
 * Set to 1 by `.ci/run` after its `npm run build` of the same sources: `buildPackage` copies that dist/
 * instead of building again. Never set it by hand over a dist/ older than the sources.
 */
export const FRESH_DIST = 'RETRYSAFE_FRESH_DIST';

/** The package as `npm run build` makes it, from the sources as they are now: its manifest and its dist/. */
export interface BuiltPackage {
  /** A directory laid out as node_modules/retrysafe: package.json, dist/, and node_modules → the repository's. */
  readonly dir: string;
  cleanup(): void;
}

/**
 * Builds the package (the repository's tsdown.config.ts, every entry, declarations included) into a
 * temporary directory — never into the repository's dist/, so a test neither reads a stale build nor
 * overwrites the one a concurrent `npm run check:package` reads. The peers resolve from the repository's
 * node_modules, as an app's own would hold them. ~25 s on two cores.
 */
export async function buildPackage(): Promise<BuiltPackage> {
  const dir = mkdtempSync(join(tmpdir(), 'retrysafe-built-'));
  try {
    copyFileSync(join(ROOT, 'package.json'), join(dir, 'package.json'));
    symlinkSync(join(ROOT, 'node_modules'), join(dir, 'node_modules'), 'dir');
    // CI (.ci/run) builds dist/ from this very checkout just before the tests, and nothing writes it while
    // they run: a copy of it is that build (and CI's 25 s of two cores are not spent on it twice).
    if (process.env[FRESH_DIST] === '1') {
      cpSync(join(ROOT, 'dist'), join(dir, 'dist'), { recursive: true });
      return { dir, cleanup: () => rmSync(dir, { recursive: true, force: true }) };
    }
    await promisify(execFile)(
      process.execPath,
      [join(ROOT, 'node_modules', 'tsdown', 'dist', 'run.mjs'), '--out-dir', join(dir, 'dist'), '--logLevel', 'error'],
      { cwd: ROOT, maxBuffer: 16 * 1024 * 1024 },
    );
  } catch (error) {
    rmSync(dir, { recursive: true, force: true });
    throw error;
  }
  return { dir, cleanup: () => rmSync(dir, { recursive: true, force: true }) };
}
