/**
 * `installSource`: where the running retrysafe came from, read from npm's record of the install, so that
 * `retrysafe init` writes a dependency the new app's `npm install` can install. The layouts are the ones
 * npm 11 writes (`npx --package ./retrysafe-0.1.0.tgz retrysafe init` installs into
 * `~/.npm/_npx/<hash>/`, whose hidden lock file names the tarball relative to that folder).
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { installSource } from '../../lib/cli/install-source';

let root: string;
beforeEach(() => {
  root = mkdtempSync(join(tmpdir(), 'retrysafe-install-'));
});
afterEach(() => rmSync(root, { recursive: true, force: true }));

/** A project at `project` (under the temporary root) with retrysafe installed and this lock entry recorded. */
function installed(project: string, entry: object, lockFile = 'node_modules/.package-lock.json'): string {
  const packageDir = join(root, project, 'node_modules', 'retrysafe');
  mkdirSync(packageDir, { recursive: true });
  writeFileSync(join(packageDir, 'package.json'), JSON.stringify({ name: 'retrysafe', version: '0.1.0' }));
  writeFileSync(
    join(root, project, lockFile),
    JSON.stringify({ lockfileVersion: 3, packages: { 'node_modules/retrysafe': entry } }),
  );
  return packageDir;
}

describe('installSource', () => {
  it('npx --package <tarball>: the tarball the user gave, as an absolute file: spec', () => {
    mkdirSync(join(root, 'downloads'));
    writeFileSync(join(root, 'downloads', 'retrysafe-0.1.0.tgz'), '');
    const packageDir = installed('npm/_npx/0b646e73', {
      version: '0.1.0',
      resolved: 'file:../../../downloads/retrysafe-0.1.0.tgz',
    });

    expect(installSource(packageDir, '0.1.0')).toEqual({
      kind: 'resolved',
      spec: `file:${join(root, 'downloads', 'retrysafe-0.1.0.tgz')}`,
      from: 'the tarball this retrysafe was installed from',
    });
  });

  it("a project's package-lock.json is read when there is no hidden lock file", () => {
    writeFileSync(join(root, 'retrysafe.tgz'), '');
    const packageDir = installed('app', { version: '0.1.0', resolved: 'file:../retrysafe.tgz' }, 'package-lock.json');

    expect(installSource(packageDir, '0.1.0')).toMatchObject({ spec: `file:${join(root, 'retrysafe.tgz')}` });
  });

  it("a registry's tarball: the version range", () => {
    const packageDir = installed('app', {
      version: '0.1.0',
      resolved: 'https://registry.npmjs.org/retrysafe/-/retrysafe-0.1.0.tgz',
    });

    expect(installSource(packageDir, '0.1.0')).toEqual({ kind: 'registry', spec: '^0.1.0' });
  });

  it('a tarball at another URL: that URL', () => {
    const packageDir = installed('app', { version: '0.1.0', resolved: 'https://example.com/builds/retrysafe.tgz' });

    expect(installSource(packageDir, '0.1.0')).toMatchObject({
      kind: 'resolved',
      spec: 'https://example.com/builds/retrysafe.tgz',
    });
  });

  it('no lock entry (another package manager): the version range', () => {
    const packageDir = join(root, 'app', 'node_modules', 'retrysafe');
    mkdirSync(packageDir, { recursive: true });

    expect(installSource(packageDir, '0.1.0')).toEqual({ kind: 'registry', spec: '^0.1.0' });
  });

  it('a link (npm link, file:<folder>) or a folder outside node_modules: a checkout, which no spec installs', () => {
    mkdirSync(join(root, 'clone'));
    const linked = installed('app', { resolved: '../clone', link: true });

    expect(installSource(linked, '0.1.0')).toEqual({ kind: 'checkout', dir: join(root, 'clone') });
    expect(installSource(join(root, 'clone'), '0.1.0')).toEqual({ kind: 'checkout', dir: join(root, 'clone') });
  });
});
