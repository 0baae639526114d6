/**
 * The app `retrysafe init` writes, type-checked as its author's `tsc` would (its `retrysafe/…` imports are
 * this repository's sources, through tsconfig.json's `paths`): it compiles as written, and its one list of
 * tools (src/tools/index.ts) and what its CDK app deploys (bin/app.ts) cannot drift apart unnoticed — a tool
 * added to TOOLS is deployed, and the compiler asks for its line in bin/app.ts's NEEDS and for its entry.
 */
import { join } from 'node:path';
import * as ts from 'typescript';
import { skeleton } from '../../lib/cli/init-command';
import { compilerOptions } from '../../tsconfig.json';

const ROOT = join(__dirname, '..', '..');
/** The first program parses aws-cdk-lib's and the SDK's declarations (~25 s on a shared machine). */
jest.setTimeout(120_000);
/** Where the skeleton's files are, in memory only: below the root, so that its node_modules resolve. */
const APP = join(ROOT, '.init-skeleton-check');
const { options } = ts.convertCompilerOptionsFromJson(
  { ...compilerOptions, noUnusedLocals: false, noUnusedParameters: false },
  ROOT,
);
/** Parsed files outside the app (lib/, node_modules), shared by every program of this suite. */
const parsed = new Map<string, ts.SourceFile | undefined>();

/** The type errors of an app with these files, as `path:line: message`. */
function typeErrors(files: Record<string, string>): string[] {
  const inApp = (path: string) => (path.startsWith(`${APP}/`) ? files[path.slice(APP.length + 1)] : undefined);
  const host = ts.createCompilerHost(options);
  const { getSourceFile, fileExists, readFile, directoryExists } = host;
  host.fileExists = (path) => inApp(path) !== undefined || (!path.startsWith(`${APP}/`) && fileExists(path));
  host.readFile = (path) => inApp(path) ?? readFile(path);
  host.directoryExists = (path) =>
    path === APP || Object.keys(files).some((file) => join(APP, file).startsWith(`${path}/`)) || directoryExists!(path);
  host.getSourceFile = (path, language, ...rest) => {
    const text = inApp(path);
    if (text !== undefined) return ts.createSourceFile(path, text, language);
    if (!parsed.has(path)) parsed.set(path, getSourceFile(path, language, ...rest));
    return parsed.get(path);
  };
  const roots = Object.keys(files)
    .filter((file) => file.endsWith('.ts'))
    .map((file) => join(APP, file));
  const program = ts.createProgram(roots, options, host);
  // The app's own files' diagnostics only: checked against lib/ and node_modules as declared, never those
  // files' own bodies (getPreEmitDiagnostics checked every .ts source of lib/ the app imports, in every
  // program of this suite, and dropped what it found there).
  const app = program.getSourceFiles().filter((file) => file.fileName.startsWith(`${APP}/`));
  return app
    .flatMap((file) => [...program.getSyntacticDiagnostics(file), ...program.getSemanticDiagnostics(file)])
    .map((diagnostic) => {
      const line = diagnostic.file!.getLineAndCharacterOfPosition(diagnostic.start!).line + 1;
      return `${diagnostic.file!.fileName.slice(APP.length + 1)}:${line}: ${ts.flattenDiagnosticMessageText(diagnostic.messageText, ' ')}`;
    });
}

const WRITTEN = skeleton('notes-app', 'file:/tmp/retrysafe.tgz');

/** A second tool, `add_tag`, written as the skeleton's add_note is: its tool file and its Lambda entry. */
const ADD_TAG = {
  'src/tools/add-tag.ts': WRITTEN['src/tools/add-note.ts']!.replaceAll('add_note', 'add_tag').replaceAll(
    'addNote',
    'addTag',
  ),
  'src/lambdas/add_tag.ts': WRITTEN['src/lambdas/add_note.ts']!.replaceAll('add-note', 'add-tag').replaceAll(
    'addNote',
    'addTag',
  ),
};

/** The skeleton's tool list with add_tag's line added, as its comment says a tool is added. */
function listedWith(line: string): Record<string, string> {
  const list = WRITTEN['src/tools/index.ts']!;
  expect(list).toMatch(/\] as const;/);
  return {
    'src/tools/index.ts': `import { addTag } from './add-tag';\n${list.replace('] as const;', `, ${line}] as const;`)}`,
  };
}

describe('the app retrysafe init writes', () => {
  it('type-checks as written', () => {
    expect(typeErrors(WRITTEN)).toEqual([]);
  });

  it('a tool added to TOOLS and nowhere else: the CDK app does not compile until its NEEDS line names it', () => {
    // The drift this prevents: four tools listed, two deployed, tsc and synth passing.
    const errors = typeErrors({ ...WRITTEN, ...ADD_TAG, ...listedWith('addTag') });

    expect(errors).toEqual([expect.stringMatching(/^bin\/app\.ts:\d+: Property 'add_tag' is missing in type/)]);
  });

  it('a TOOLS line whose Lambda entry does not exist does not compile', () => {
    const { 'src/lambdas/add_tag.ts': _entry, ...toolOnly } = ADD_TAG;
    const errors = typeErrors({
      ...WRITTEN,
      ...toolOnly,
      ...listedWith("registered<typeof import('../lambdas/add_tag')>(addTag)"),
    });

    expect(errors).toContainEqual(
      expect.stringMatching(/^src\/tools\/index\.ts:\d+: Cannot find module '\.\.\/lambdas\/add_tag'/),
    );
  });

  it('a NEEDS line for a tool that is not in TOOLS does not compile', () => {
    const app = WRITTEN['bin/app.ts']!;
    const errors = typeErrors({
      ...WRITTEN,
      'bin/app.ts': app.replace('add_note: {},', 'add_note: {},\n  add_tag: {},'),
    });

    expect(errors).toEqual([
      expect.stringMatching(/^bin\/app\.ts:\d+: Object literal may only specify known properties/),
    ]);
  });

  it('a tool added as the tool list says (its file, its entry, its TOOLS line, its NEEDS line) compiles', () => {
    const app = WRITTEN['bin/app.ts']!;

    const errors = typeErrors({
      ...WRITTEN,
      ...ADD_TAG,
      ...listedWith("registered<typeof import('../lambdas/add_tag')>(addTag)"),
      'bin/app.ts': app.replace(
        'add_note: {},',
        "add_note: {},\n  add_tag: { environment: { TAGS_URL: 'https://x' } },",
      ),
    });

    expect(errors).toEqual([]);
  });
});
