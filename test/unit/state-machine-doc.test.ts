import { readdirSync, readFileSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import { DEFAULT_RECORD_ATTRIBUTES } from '../../lib/idempotency/protocol/record';

/**
 * docs/state-machine.md's promise (STYLE.md, "A rule leads to its tests"): each rule names the tests that
 * hold it, and each test file names its rule (`// Rule N (docs/state-machine.md): …` atop it). Review of
 * issue 34, which moved the tests by rule and by module: the two lists must agree both ways.
 */
const ROOT = resolve(__dirname, '..', '..');
const DOC = readFileSync(join(ROOT, 'docs', 'state-machine.md'), 'utf8');

/** Each numbered rule's text, from `N. **` to the next rule or heading. */
function rulesOf(doc: string): Map<string, string> {
  const rules = new Map<string, string>();
  const start = doc.indexOf('## The rules');
  const lines = doc.slice(start).split('\n').slice(1);
  let current: string | undefined;
  for (const line of lines) {
    if (line.startsWith('#')) break;
    const numbered = /^(\d+)\. \*\*/.exec(line);
    if (numbered) current = numbered[1]!;
    if (current) rules.set(current, `${rules.get(current) ?? ''}${line}\n`);
  }
  return rules;
}

/** The test files a rule's text names (a `*` in a name is any run of characters). */
function testsNamedBy(text: string, files: readonly string[]): string[] {
  return [...text.matchAll(/`(test\/[^`]+\.test\.ts)`/g)].flatMap(([, pattern]) => {
    const matcher = new RegExp(`^${pattern!.replace(/[.]/g, '\\.').replace(/\*/g, '[^/]*')}$`);
    return files.filter((file) => matcher.test(file));
  });
}

function testFiles(directory: string): string[] {
  return readdirSync(directory, { withFileTypes: true }).flatMap((entry) => {
    const path = join(directory, entry.name);
    if (entry.isDirectory()) return testFiles(path);
    return entry.name.endsWith('.test.ts') ? [relative(ROOT, path)] : [];
  });
}

const RULES = rulesOf(DOC);
const FILES = testFiles(join(ROOT, 'test'));
/** The rules a test file names atop it. */
const named = (file: string) =>
  new Set(
    [...readFileSync(join(ROOT, file), 'utf8').matchAll(/^\/\/ Rule (\d+) \(docs\/state-machine\.md\)/gm)].map(
      ([, rule]) => rule!,
    ),
  );

describe('docs/state-machine.md and the tests of its rules', () => {
  it('has rules to read', () => {
    expect([...RULES.keys()]).toEqual(['1', '2', '3', '4', '5', '6', '7', '8']);
  });

  it.each([...RULES.keys()])('rule %s names every test file that names it', (rule) => {
    const listed = new Set(testsNamedBy(RULES.get(rule)!, FILES));

    expect(FILES.filter((file) => named(file).has(rule) && !listed.has(file))).toEqual([]);
  });

  it.each([...RULES.keys()])('every test file rule %s names names it back', (rule) => {
    const listed = testsNamedBy(RULES.get(rule)!, FILES);

    expect(listed.filter((file) => !named(file).has(rule))).toEqual([]);
  });
});

describe('docs/state-machine.md and the call record', () => {
  it('"Call record" names every attribute a call record holds (review 7, R7-4: unrun_attempts, queued_attempts were missing)', () => {
    const start = DOC.indexOf('## Call record');
    const section = DOC.slice(start, DOC.indexOf('```mermaid', start));
    // The key is the heading's `Key …`; an intent's own attributes are the intent's section's.
    const ofIntentsOnly: readonly string[] = [
      DEFAULT_RECORD_ATTRIBUTES.intentHolder,
      DEFAULT_RECORD_ATTRIBUTES.windowEnd,
      DEFAULT_RECORD_ATTRIBUTES.replacedWindow,
      DEFAULT_RECORD_ATTRIBUTES.intentRunners,
    ];
    const held = Object.values(DEFAULT_RECORD_ATTRIBUTES).filter(
      (name) => name !== DEFAULT_RECORD_ATTRIBUTES.key && !ofIntentsOnly.includes(name),
    );

    expect(held.filter((name) => !section.includes(`\`${name}\``))).toEqual([]);
  });

  it('"Dedupe-window intent" names every attribute only an intent holds', () => {
    const start = DOC.indexOf('## Dedupe-window intent');
    const section = DOC.slice(start, DOC.indexOf('\n## ', start + 1));
    const ofIntentsOnly = ['windowEnd', 'replacedWindow', 'intentRunners'] as const;

    expect(
      ofIntentsOnly.map((name) => DEFAULT_RECORD_ATTRIBUTES[name]).filter((n) => !section.includes(`\`${n}\``)),
    ).toEqual([]);
  });
});
