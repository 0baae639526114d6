import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { PACKAGE_ENTRIES, PACKAGE_SUBPATHS } from '../../lib/package-entries';
import packageJson from '../../package.json';

const ROOT = join(__dirname, '..', '..');

type Conditions = { types: string; default: string };
const exportsMap = packageJson.exports as unknown as Record<
  string,
  { import: Conditions; require: Conditions } | string
>;

describe('the exports map', () => {
  it('names every public subpath, and nothing else but package.json', () => {
    expect(Object.keys(exportsMap).sort()).toEqual([...Object.keys(PACKAGE_SUBPATHS), './package.json'].sort());
  });

  it.each(Object.entries(PACKAGE_SUBPATHS))('maps %s to the built files of %s, types first', (subpath, entry) => {
    const conditions = exportsMap[subpath] as { import: Conditions; require: Conditions };

    expect(conditions).toEqual({
      import: { types: `./dist/${entry}.d.mts`, default: `./dist/${entry}.mjs` },
      require: { types: `./dist/${entry}.d.cts`, default: `./dist/${entry}.cjs` },
    });
    expect(Object.keys(conditions.import)[0]).toBe('types');
    expect(Object.keys(conditions.require)[0]).toBe('types');
    expect(existsSync(join(ROOT, PACKAGE_ENTRIES[entry]))).toBe(true);
  });

  it('gives TypeScript projects on the old node resolution the same declarations (typesVersions)', () => {
    const typesVersions = (packageJson as unknown as { typesVersions: { '*': Record<string, string[]> } })
      .typesVersions['*'];

    for (const [subpath, entry] of Object.entries(PACKAGE_SUBPATHS)) {
      if (subpath === '.') continue;
      expect([subpath, typesVersions[subpath.slice(2)]]).toEqual([subpath, [`./dist/${entry}.d.cts`]]);
    }
  });

  it('depends on nothing an agent app would install: every server dependency is an optional peer', () => {
    const manifest = packageJson as unknown as {
      dependencies?: Record<string, string>;
      peerDependencies: Record<string, string>;
      peerDependenciesMeta: Record<string, { optional?: boolean }>;
    };

    expect(manifest.dependencies ?? {}).toEqual({});
    for (const name of Object.keys(manifest.peerDependencies)) {
      expect([name, manifest.peerDependenciesMeta[name]?.optional]).toEqual([name, true]);
    }
  });
});
