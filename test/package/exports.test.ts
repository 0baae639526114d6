import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import * as ts from 'typescript';
import { PACKAGE_ENTRIES, PACKAGE_SUBPATHS } from '../../lib/package-entries';
import packageJson from '../../package.json';
import tsconfig from '../../tsconfig.json';

const ROOT = join(__dirname, '..', '..');

type Conditions = { types: string; default: string };
const exportsMap = packageJson.exports as unknown as Record<
  string,
  { import: Conditions; require: Conditions } | string
>;

/** The modules `text` loads at run time: value imports and re-exports, `require(…)` and `import(…)`. */
function runtimeSpecifiers(file: string, text: string): string[] {
  const specifiers: string[] = [];
  const visit = (node: ts.Node): void => {
    if (ts.isImportDeclaration(node) && !node.importClause?.isTypeOnly && ts.isStringLiteral(node.moduleSpecifier)) {
      specifiers.push(node.moduleSpecifier.text);
    } else if (
      ts.isExportDeclaration(node) &&
      !node.isTypeOnly &&
      node.moduleSpecifier &&
      ts.isStringLiteral(node.moduleSpecifier)
    ) {
      specifiers.push(node.moduleSpecifier.text);
    } else if (ts.isCallExpression(node) && node.arguments[0] && ts.isStringLiteral(node.arguments[0])) {
      const callee = node.expression;
      if ((ts.isIdentifier(callee) && callee.text === 'require') || callee.kind === ts.SyntaxKind.ImportKeyword) {
        specifiers.push(node.arguments[0].text);
      }
    }
    ts.forEachChild(node, visit);
  };
  visit(ts.createSourceFile(file, text, ts.ScriptTarget.Latest, false));
  return specifiers;
}

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

  it("maps every public subpath to its source in tsconfig.json's paths, which the example app imports through", () => {
    const { paths } = (tsconfig as { compilerOptions: { paths: Record<string, string[]> } }).compilerOptions;
    const expected = Object.fromEntries(
      Object.entries(PACKAGE_SUBPATHS).map(([subpath, entry]) => [
        `retrysafe${subpath.slice(1)}`,
        [`./${PACKAGE_ENTRIES[entry]}`],
      ]),
    );

    expect(paths).toEqual(expected);
  });

  it('gives TypeScript projects on the old node resolution the same declarations (typesVersions)', () => {
    const typesVersions = (packageJson as unknown as { typesVersions: { '*': Record<string, string[]> } })
      .typesVersions['*'];

    for (const [subpath, entry] of Object.entries(PACKAGE_SUBPATHS)) {
      if (subpath === '.') continue;
      expect([subpath, typesVersions[subpath.slice(2)]]).toEqual([subpath, [`./dist/${entry}.d.cts`]]);
    }
  });

  it('installs what its code loads with one line: every package lib/ imports is a dependency or a peer', () => {
    const manifest = packageJson as unknown as {
      dependencies: Record<string, string>;
      optionalDependencies: Record<string, string>;
      peerDependencies: Record<string, string>;
      peerDependenciesMeta: Record<string, { optional?: boolean }>;
    };
    const installed = new Set([
      ...Object.keys(manifest.dependencies),
      ...Object.keys(manifest.optionalDependencies),
      ...Object.keys(manifest.peerDependencies),
    ]);
    // What the package's code really loads: from each entry, every import, require or import() that is
    // not type-only (parsed, so a template's text is not an import), followed through the package's own files; Node's own modules aside.
    const loaded = new Set<string>();
    const seen = new Set<string>();
    const pending = Object.values(PACKAGE_ENTRIES).map((file) => join(ROOT, file));
    while (pending.length > 0) {
      const file = pending.pop()!;
      if (seen.has(file)) continue;
      seen.add(file);
      for (const specifier of runtimeSpecifiers(file, readFileSync(file, 'utf8'))) {
        if (specifier.startsWith('.')) {
          const base = join(dirname(file), specifier);
          const found = [`${base}.ts`, join(base, 'index.ts')].find((candidate) => existsSync(candidate));
          if (found) pending.push(found);
          continue;
        }
        if (specifier.startsWith('node:')) continue;
        const parts = specifier.split('/');
        loaded.add(specifier.startsWith('@') ? `${parts[0]}/${parts[1]}` : parts[0]!);
      }
    }

    expect([...loaded].filter((name) => !installed.has(name)).sort()).toEqual([]);
  });

  it("keeps as peers only what an app's own code must share one copy of, and the construct's toolchain", () => {
    const manifest = packageJson as unknown as {
      peerDependencies: Record<string, string>;
      peerDependenciesMeta: Record<string, { optional?: boolean }>;
    };
    const required = Object.keys(manifest.peerDependencies).filter(
      (name) => !manifest.peerDependenciesMeta[name]?.optional,
    );

    // npm installs required peers with the package: the app's schemas (zod) and the DynamoDB client its
    // stores are given (an error class from a second copy fails instanceof) are the app's own copies.
    expect(required.sort()).toEqual(['@aws-sdk/client-dynamodb', '@aws-sdk/lib-dynamodb', 'zod']);
  });
});
