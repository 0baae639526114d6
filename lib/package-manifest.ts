import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';

/** What retrysafe's code reads of its own package.json. */
export interface PackageManifest {
  readonly version: string;
  readonly dependencies: Readonly<Record<string, string>>;
  readonly peerDependencies: Readonly<Record<string, string>>;
  readonly peerDependenciesMeta?: Readonly<Record<string, { readonly optional?: boolean }>>;
}

/**
 * The directory of retrysafe's own package.json, found by walking up from this file: the repository's root
 * from lib/ (the sources), the package's root from dist/ (built, and installed under node_modules/retrysafe).
 */
export function packageRoot(): string {
  for (let dir = __dirname; ; dir = dirname(dir)) {
    const file = join(dir, 'package.json');
    if (existsSync(file) && JSON.parse(readFileSync(file, 'utf8')).name === 'retrysafe') return dir;
    if (dirname(dir) === dir) throw new Error(`retrysafe: cannot find its own package.json above ${__dirname}`);
  }
}

/** retrysafe's own package.json (see `packageRoot`). */
export function packageManifest(): PackageManifest {
  return JSON.parse(readFileSync(join(packageRoot(), 'package.json'), 'utf8'));
}
