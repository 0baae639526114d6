/**
 * `retrysafe init --retrysafe SPEC` (review of issue 34, the front door): the dependency written must be one
 * the new app's `npm install` installs. npm reads a path spec — `file:PATH`, and equally a bare `./x.tgz`,
 * `../x.tgz` or `x.tgz` (npm-package-arg: a path, or a name ending in .tgz / .tar.gz) — relative to the
 * app's own folder, not to where init ran. init makes `file:PATH` absolute; a bare path is written as given.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { initCommand } from '../../lib/cli/init-command';

let parent: string;
beforeEach(() => {
  parent = mkdtempSync(join(tmpdir(), 'retrysafe-init-dep-'));
  writeFileSync(join(parent, 'retrysafe-0.1.0.tgz'), '');
  jest.spyOn(console, 'log').mockImplementation(() => undefined);
});
afterEach(() => {
  jest.restoreAllMocks();
  rmSync(parent, { recursive: true, force: true });
});

/** The file npm installs for `spec`, from the folder of the package.json that names it. */
function tarballFrom(appDir: string, spec: string): string {
  return resolve(appDir, spec.startsWith('file:') ? spec.slice('file:'.length) : spec);
}

describe('retrysafe init --retrysafe <a tarball path>', () => {
  it.each(['./retrysafe-0.1.0.tgz', 'retrysafe-0.1.0.tgz', 'file:./retrysafe-0.1.0.tgz'])(
    '%s: package.json names the tarball init was pointed at, as npm resolves it from the new app',
    async (spec) => {
      await initCommand(['notes-app', '--retrysafe', spec], parent);

      const appDir = join(parent, 'notes-app');
      const manifest = JSON.parse(readFileSync(join(appDir, 'package.json'), 'utf8'));
      expect(tarballFrom(appDir, manifest.dependencies.retrysafe)).toBe(join(parent, 'retrysafe-0.1.0.tgz'));
    },
  );
});
