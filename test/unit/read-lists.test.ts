/**
 * An app's reads are one list: its config, its MCP entry, its OpenAPI entry and its construct each take it,
 * and the entries do not default it to none — a forgotten list is a compile error, not an OpenAPI document
 * or an MCP endpoint that silently disagrees with the routes the stack deploys.
 */
import { join } from 'node:path';
import * as ts from 'typescript';
import { compilerOptions } from '../../tsconfig.json';

const ROOT = join(__dirname, '..', '..');

/** The type errors of an entry file at the repository's root, by the line (1-based) they are on. */
function errorLines(source: string): Record<number, string> {
  const file = join(ROOT, 'lambdas', '__entry_check__.ts');
  const { options } = ts.convertCompilerOptionsFromJson(compilerOptions, ROOT);
  const host = ts.createCompilerHost(options);
  const read = host.getSourceFile;
  host.getSourceFile = (name, language) =>
    name === file ? ts.createSourceFile(name, source, language) : read(name, language);
  host.fileExists = (
    (exists) => (name: string) =>
      name === file || exists(name)
  )(host.fileExists);
  const program = ts.createProgram([file], options, host);
  const errors: Record<number, string> = {};
  for (const diagnostic of ts.getPreEmitDiagnostics(program, program.getSourceFile(file))) {
    const line = diagnostic.file!.getLineAndCharacterOfPosition(diagnostic.start!).line + 1;
    errors[line] = ts.flattenDiagnosticMessageText(diagnostic.messageText, ' ');
  }
  return errors;
}

describe("the entries that serve an app's reads", () => {
  it('take the reads as a required argument: an app without reads passes []', () => {
    const calls = [
      'openApiEntry(TOOLS);',
      'mcpEntry(TOOLS, services);',
      'mcpEntry(TOOLS, services, {});',
      'openApiEntry(TOOLS, READS);',
      'mcpEntry(TOOLS, services, { reads: READS });',
      'openApiEntry(TOOLS, []);',
      'mcpEntry(TOOLS, services, { reads: [] });',
    ];
    const header = [
      "import { mcpEntry } from 'retrysafe/lambda/mcp';",
      "import { openApiEntry } from 'retrysafe/lambda/listing';",
      "import { READS } from '../app/reads';",
      "import { services } from '../app/services';",
      "import { TOOLS } from '../app/tools';",
    ];

    const errors = errorLines([...header, ...calls].join('\n'));

    const refused = calls.filter((_call, index) => errors[header.length + index + 1] !== undefined);
    expect(refused).toEqual(['openApiEntry(TOOLS);', 'mcpEntry(TOOLS, services);', 'mcpEntry(TOOLS, services, {});']);
    expect(
      Object.keys(errors)
        .map(Number)
        .every((line) => line > header.length),
    ).toBe(true);
  });
});
