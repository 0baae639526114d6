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
 * retrysafe's own package.json and its directory, found by walking up from this file: the repository's root
 * from lib/ (the sources), the package's root from dist/ (built, and installed under node_modules/retrysafe).
 */
function ownPackage(): { readonly dir: string; readonly manifest: PackageManifest } {
  for (let dir = __dirname; ; dir = dirname(dir)) {
    const file = join(dir, 'package.json');
    if (existsSync(file)) {
      const manifest = JSON.parse(readFileSync(file, 'utf8'));
      if (manifest.name === 'retrysafe') return { dir, manifest };
    }
    if (dirname(dir) === dir) throw new Error(`retrysafe: cannot find its own package.json above ${__dirname}`);
  }
}

/** The directory of retrysafe's own package.json. */
export function packageRoot(): string {
  return ownPackage().dir;
}

/** retrysafe's own package.json. */
export function packageManifest(): PackageManifest {
  return ownPackage().manifest;
}
