import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';

/**
 * Rules for suites that share one DynamoDB Local, read from their source: a rule here holds every suite,
 * not only the one that once broke it.
 */
const TEST_ROOT = join(__dirname, '..');

function testFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return entry.name === 'node_modules' ? [] : testFiles(path);
    return entry.name.endsWith('.test.ts') ? [path] : [];
  });
}

/** A suite runs a tenant's erase against DynamoDB Local: the function, or the CLI's `erase` command. */
const ERASES = [/\beraseTenant\(/, /\[\s*\.\.\.NODE,\s*'erase'/];
/**
 * The suite names an idempotency table of its own (own-table.ts; or through the liveness reviews' world,
 * liveness-world.ts, which does), or creates one by hand.
 */
const OWN_TABLE = [/\bownIdempotencyTable\(/, /\blivenessWorld\(/, /createTableInput\(IDEMPOTENCY_TABLE,/];
/** Suites that erase against a mocked client (aws-sdk-client-mock): no table to share. */
const MOCKED = /\bmockClient\(/;

describe('suites sharing DynamoDB Local', () => {
  const files = testFiles(TEST_ROOT);

  it('has suites that erase to look at', () => {
    expect(files.filter((file) => ERASES.some((rule) => rule.test(readFileSync(file, 'utf8')))).length).toBeGreaterThan(
      5,
    );
  });

  // A tenant's erase takes every record of no tenant (a Powertools handler's) as its own (rule 6): on the
  // shared table it reports other suites' calls in flight, and its report depends on which suites ran
  // beside it (CI, stop 45: stack.test's "every call settled" read two stalled calls it never made).
  it('every suite that erases a tenant on DynamoDB Local keeps to an idempotency table of its own', () => {
    const shared = files
      .filter((file) => {
        const source = readFileSync(file, 'utf8');
        return (
          ERASES.some((rule) => rule.test(source)) &&
          !MOCKED.test(source) &&
          !OWN_TABLE.some((rule) => rule.test(source))
        );
      })
      .map((file) => relative(TEST_ROOT, file));
    expect(shared).toEqual([]);
  });
});
