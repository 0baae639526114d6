import { execFile } from 'node:child_process';
import { copyFileSync, mkdtempSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';

const ROOT = join(__dirname, '..', '..');

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
