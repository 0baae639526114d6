/**
 * `lib/` is the package: nothing in it names the example app's tools, reads or tables (those live in
 * app/, lambdas/, bin/app.ts and retrysafe.config.ts, which import only `retrysafe/…` — biome's
 * noRestrictedImports holds them to it). Read from the files themselves, so a name that creeps back in
 * fails here.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import * as ts from 'typescript';
import { READS } from '../../app/reads';
import { TABLES } from '../../app/tables';
import { TOOLS } from '../../app/tools';

const ROOT = join(__dirname, '..', '..');

/** A source's code, parsed: the words of its identifiers and strings (not its comments), and what it imports. */
function codeOf(file: string): { words: Set<string>; imports: string[] } {
  const source = ts.createSourceFile(file, readFileSync(file, 'utf8'), ts.ScriptTarget.Latest, true);
  const words = new Set<string>();
  const imports: string[] = [];
  const visit = (node: ts.Node): void => {
    if (ts.isIdentifier(node)) words.add(node.text);
    if (ts.isStringLiteralLike(node) || ts.isTemplateLiteralToken(node)) {
      for (const word of node.text.split(/[^A-Za-z0-9_-]+/)) words.add(word);
    }
    if ((ts.isImportDeclaration(node) || ts.isExportDeclaration(node)) && node.moduleSpecifier) {
      imports.push((node.moduleSpecifier as ts.StringLiteral).text);
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return { words, imports };
}

function sources(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? sources(path) : name.endsWith('.ts') ? [path] : [];
  });
}

describe('lib/ is the package, apart from the example app', () => {
  const names = [
    ...TOOLS.map((tool) => tool.name),
    ...READS.map((read) => read.name),
    ...Object.keys(TABLES),
    ...Object.values(TABLES).map((table) => table.defaultName),
  ];

  it.each(sources(join(ROOT, 'lib')).map((file) => [relative(ROOT, file), file]))(
    '%s names no example tool, read or table in its code, and imports nothing of it',
    (_name, file) => {
      const { words, imports } = codeOf(file);
      const found = names.filter((name) => words.has(name));
      const fromApp = imports.filter((specifier) => /^(\.\.\/)+(app|lambdas)\//.test(specifier));

      expect({ found, fromApp }).toEqual({ found: [], fromApp: [] });
    },
  );
});
