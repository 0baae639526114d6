import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import ts from 'typescript';
import { DEFAULT_RECORD_ATTRIBUTES } from '../../lib/idempotency/protocol/record';

/**
 * The shape the idempotency core keeps, measured on its source with the TypeScript parser: it could be
 * lifted out as it is (it imports only npm packages and itself), every DynamoDB command is built in
 * `protocol/` (one function per transition of docs/state-machine.md), nothing in it asserts a value
 * non-null (`!`), and it stays readable (files ≤ 400 lines, functions ≤ 70).
 */
const CORE = resolve(__dirname, '..', '..', 'lib', 'idempotency');
const MAX_FILE_LINES = 400;
const MAX_FUNCTION_LINES = 70;

function sourceFiles(directory: string): string[] {
  return readdirSync(directory, { withFileTypes: true }).flatMap((entry) => {
    const path = join(directory, entry.name);
    if (entry.isDirectory()) return sourceFiles(path);
    return entry.name.endsWith('.ts') ? [path] : [];
  });
}

const FILES = sourceFiles(CORE).map((path) => ({
  name: relative(CORE, path),
  path,
  source: ts.createSourceFile(path, readFileSync(path, 'utf8'), ts.ScriptTarget.ES2022, true),
}));

function walk(node: ts.Node, visit: (node: ts.Node) => void): void {
  visit(node);
  node.forEachChild((child) => walk(child, visit));
}

function lineOf(source: ts.SourceFile, position: number): number {
  return source.getLineAndCharacterOfPosition(position).line + 1;
}

/** Every module specifier a file imports or re-exports from. */
function specifiersOf(source: ts.SourceFile): Array<{ specifier: string; typeOnly: boolean }> {
  const found: Array<{ specifier: string; typeOnly: boolean }> = [];
  for (const statement of source.statements) {
    if (ts.isImportDeclaration(statement) && ts.isStringLiteral(statement.moduleSpecifier)) {
      const clause = statement.importClause;
      const typeOnly =
        clause !== undefined &&
        (clause.isTypeOnly ||
          (clause.name === undefined &&
            clause.namedBindings !== undefined &&
            ts.isNamedImports(clause.namedBindings) &&
            clause.namedBindings.elements.every((element) => element.isTypeOnly)));
      found.push({ specifier: statement.moduleSpecifier.text, typeOnly });
    }
    if (
      ts.isExportDeclaration(statement) &&
      statement.moduleSpecifier &&
      ts.isStringLiteral(statement.moduleSpecifier)
    ) {
      found.push({ specifier: statement.moduleSpecifier.text, typeOnly: statement.isTypeOnly });
    }
  }
  return found;
}

describe('the idempotency core', () => {
  it('has source files to measure', () => {
    expect(FILES.map((file) => file.name)).toEqual(
      expect.arrayContaining(['runtime.ts', join('protocol', 'claim.ts')]),
    );
  });

  it.each(FILES.map((file) => [file.name, file] as const))(
    '%s imports only npm packages and the core',
    (_name, file) => {
      const outside = specifiersOf(file.source)
        .map(({ specifier }) => specifier)
        .filter((specifier) => specifier.startsWith('.'))
        .filter((specifier) => relative(CORE, resolve(dirname(file.path), specifier)).startsWith('..'));

      expect(outside).toEqual([]);
    },
  );

  it.each(FILES.map((file) => [file.name, file] as const))(
    '%s builds DynamoDB commands only in protocol/',
    (name, file) => {
      const commands = specifiersOf(file.source).filter(
        ({ specifier, typeOnly }) => specifier === '@aws-sdk/client-dynamodb' && !typeOnly,
      );

      expect(name.startsWith(`protocol${sep}`) ? [] : commands).toEqual([]);
    },
  );

  it.each(FILES.map((file) => [file.name, file] as const))(`%s is at most ${MAX_FILE_LINES} lines`, (_name, file) => {
    expect(file.source.getLineAndCharacterOfPosition(file.source.end).line).toBeLessThanOrEqual(MAX_FILE_LINES);
  });

  it.each(FILES.map((file) => [file.name, file] as const))(
    `%s has no function longer than ${MAX_FUNCTION_LINES} lines`,
    (_name, file) => {
      const long: string[] = [];
      walk(file.source, (node) => {
        if (!ts.isFunctionLike(node) || !('body' in node) || node.body === undefined) return;
        const lines = lineOf(file.source, node.end) - lineOf(file.source, node.getStart(file.source)) + 1;
        const name = node.name?.getText(file.source) ?? '(anonymous)';
        if (lines > MAX_FUNCTION_LINES) long.push(`${name} at line ${lineOf(file.source, node.getStart())}: ${lines}`);
      });

      expect(long).toEqual([]);
    },
  );

  it.each(FILES.map((file) => [file.name, file] as const))('%s asserts nothing non-null (`!`)', (_name, file) => {
    const asserted: string[] = [];
    walk(file.source, (node) => {
      if (ts.isNonNullExpression(node))
        asserted.push(`line ${lineOf(file.source, node.getStart())}: ${node.getText()}`);
    });

    expect(asserted).toEqual([]);
  });
});

/**
 * The record on disk has one home, `lib/idempotency/protocol/` (as Powertools keeps names, the item ↔ record
 * mapping and every conditional write in one `DynamoDBPersistenceLayer.ts`): no other file of retrysafe's
 * code writes a `ConditionExpression` or a stored attribute's name. Elsewhere the names come from
 * `DEFAULT_RECORD_ATTRIBUTES` (or the runtime's `attributes` option), and conditions from `protocol/`.
 */
describe('the record on disk', () => {
  const ROOT = resolve(__dirname, '..', '..');
  const PROTOCOL = join(CORE, 'protocol');
  const CODE = ['lib', 'app', 'lambdas', 'bin']
    .flatMap((folder) => sourceFiles(join(ROOT, folder)))
    .filter((path) => !path.startsWith(`${PROTOCOL}${sep}`))
    .map((path) => ({
      name: relative(ROOT, path),
      source: ts.createSourceFile(path, readFileSync(path, 'utf8'), ts.ScriptTarget.ES2022, true),
    }));
  /**
   * Names too common to police by their text: they mean other things too (an app table's `tenant`, a
   * stream's `data` event, a record's `id`). Every other stored name is retrysafe's own.
   */
  const COMMON = new Set(['id', 'status', 'data', 'tenant', 'tool', 'call']);
  const STORED = Object.values(DEFAULT_RECORD_ATTRIBUTES).filter((name) => !COMMON.has(name));

  it('has code outside protocol/ to look at, and stored names to look for', () => {
    expect(CODE.map((file) => file.name)).toEqual(
      expect.arrayContaining([join('lib', 'admin', 'erase-tenant.ts'), join('lib', 'idempotency', 'runtime.ts')]),
    );
    expect(STORED).toEqual(expect.arrayContaining(['in_progress_expiration', 'claim_id', 'intent_owner']));
  });

  // The example app's own tables are the app's: its conditional writes are its domain's (rule 5's stamped
  // create, the one retrysafe gives a tool, is `protocol/commit.ts`).
  const LIB = CODE.filter((file) => file.name.startsWith(`lib${sep}`));

  it.each(LIB.map((file) => [file.name, file] as const))(
    '%s writes no ConditionExpression (protocol/ writes every one)',
    (_name, file) => {
      const found: string[] = [];
      walk(file.source, (node) => {
        if (
          (ts.isPropertyAssignment(node) || ts.isShorthandPropertyAssignment(node)) &&
          node.name.getText(file.source) === 'ConditionExpression'
        ) {
          found.push(`line ${lineOf(file.source, node.getStart(file.source))}`);
        }
      });

      expect(found).toEqual([]);
    },
  );

  it.each(CODE.map((file) => [file.name, file] as const))(
    '%s names no stored attribute (protocol/record.ts names them)',
    (_name, file) => {
      const found: string[] = [];
      walk(file.source, (node) => {
        if (!ts.isStringLiteralLike(node)) return;
        if (STORED.includes(node.text))
          found.push(`line ${lineOf(file.source, node.getStart(file.source))}: ${node.text}`);
      });

      expect(found).toEqual([]);
    },
  );
});
