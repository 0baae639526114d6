import { existsSync, readFileSync, statSync } from 'node:fs';
import { basename, dirname, join, relative, resolve, sep } from 'node:path';

/**
 * Where the running copy of retrysafe came from, as `retrysafe init` must name it in a new app's
 * package.json so that `npm install` there installs this same package:
 *  - `registry`: installed from a registry's tarball (or nothing says otherwise): `^<version>`;
 *  - `resolved`: installed from something else npm can install again — a tarball on disk (`npx --package
 *    ./retrysafe-0.1.0.tgz retrysafe init`: `file:<its absolute path>`), a tarball's URL, a git URL;
 *  - `checkout`: a working copy (the sources, or a build run in place) or an `npm link`/`file:<dir>` link
 *    to one, which no spec installs as a package: the user packs it and names the tarball.
 */
export type InstallSource =
  | { readonly kind: 'registry'; readonly spec: string }
  | { readonly kind: 'resolved'; readonly spec: string; readonly from: string }
  | { readonly kind: 'checkout'; readonly dir: string };

/** What npm's lock files record of one installed package (`packages["node_modules/retrysafe"]`). */
interface LockedPackage {
  readonly resolved?: string;
  readonly link?: boolean;
}

/**
 * The lock entry npm wrote when it installed the package in `packageDir`: the nearest directory above it
 * whose hidden lock file (`node_modules/.package-lock.json`, npm 7+, also what `npx` and global installs
 * keep) or `package-lock.json` lists it, keyed by its path from there.
 */
function lockedEntry(packageDir: string): { readonly root: string; readonly entry: LockedPackage } | undefined {
  for (let root = dirname(packageDir); dirname(root) !== root; root = dirname(root)) {
    const key = relative(root, packageDir).split(sep).join('/');
    for (const lockFile of [join(root, 'node_modules', '.package-lock.json'), join(root, 'package-lock.json')]) {
      if (!existsSync(lockFile)) continue;
      try {
        const entry = (JSON.parse(readFileSync(lockFile, 'utf8')) as { packages?: Record<string, LockedPackage> })
          .packages?.[key];
        if (entry) return { root, entry };
      } catch {
        // An unreadable lock file says nothing of this package; a lock file further up may.
      }
    }
  }
  return undefined;
}

/**
 * How the retrysafe whose package.json is in `packageDir` (at `version`) was installed. Read from npm's own
 * record of the install (its lock file's `resolved`), not guessed from paths: `npx --package <tgz>` installs
 * into npm's cache, whose lock file names the tarball the user gave, relative to that cache.
 */
export function installSource(packageDir: string, version: string): InstallSource {
  if (basename(dirname(packageDir)) !== 'node_modules') return { kind: 'checkout', dir: packageDir };
  const locked = lockedEntry(packageDir);
  const resolved = locked?.entry.resolved;
  if (!locked || resolved === undefined) return { kind: 'registry', spec: `^${version}` };
  if (locked.entry.link) return { kind: 'checkout', dir: resolve(locked.root, resolved) };
  if (resolved.startsWith('file:')) {
    const path = resolve(locked.root, resolved.slice('file:'.length));
    if (existsSync(path) && statSync(path).isDirectory()) return { kind: 'checkout', dir: path };
    return { kind: 'resolved', spec: `file:${path}`, from: 'the tarball this retrysafe was installed from' };
  }
  // A registry's own tarball (…/retrysafe/-/retrysafe-0.1.0.tgz): the version range installs it again.
  if (/\/-\/retrysafe-[^/]+\.tgz$/.test(resolved)) return { kind: 'registry', spec: `^${version}` };
  return { kind: 'resolved', spec: resolved, from: 'the address this retrysafe was installed from' };
}
