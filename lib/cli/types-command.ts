import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, relative, resolve } from 'node:path';
import { flagsOf, UsageError } from './args';
import { findConfig, loadConfig } from './load-config';
import { toolTypesSource } from './tool-types';

export const TYPES_USAGE = `usage: retrysafe types [--out FILE] [--name NAME] [--import MODULE] [--config FILE]

Writes the app's tools' argument and receipt types as plain TypeScript — one type, tool name →
ToolTypes<args, receipt>, read from the JSON Schema the tools are listed with — for an agent app's
typed client: new RetrysafeClient<AppTools>(…). The file imports no zod and no server package.

  --out FILE       write it there (default: print it)
  --name NAME      the type's name (default AppTools)
  --import MODULE  where ToolTypes is imported from (default retrysafe/client)
  --config FILE    the app's config (default retrysafe.config.ts here)`;

const DEFAULT_NAME = 'AppTools';
const DEFAULT_IMPORT = 'retrysafe/client';

/** `retrysafe types`: the app's tool types as a TypeScript module. */
export async function typesCommand(argv: readonly string[], cwd: string): Promise<number> {
  const { values, help } = flagsOf(
    argv,
    {
      out: { type: 'string' },
      name: { type: 'string', default: DEFAULT_NAME },
      import: { type: 'string', default: DEFAULT_IMPORT },
      config: { type: 'string' },
    },
    TYPES_USAGE,
  );
  if (help) {
    console.log(TYPES_USAGE);
    return 0;
  }
  const name = values.name ?? DEFAULT_NAME;
  if (!/^[A-Z][A-Za-z0-9_]*$/.test(name))
    throw new UsageError(`--name: "${name}" is not a type name (PascalCase)`, TYPES_USAGE);
  const file = findConfig(cwd, values.config);
  const config = loadConfig(file);
  // The command that regenerates the file, from what was parsed (the config aside: it is named below).
  const command = [
    'retrysafe types',
    ...(values.out === undefined ? [] : ['--out', values.out]),
    ...(name === DEFAULT_NAME ? [] : ['--name', name]),
    ...(values.import === DEFAULT_IMPORT ? [] : ['--import', values.import]),
  ].join(' ');
  const source = toolTypesSource(config.tools, {
    name,
    importFrom: values.import ?? DEFAULT_IMPORT,
    header: [
      `Generated from ${relative(cwd, file)} by:`,
      `  ${command}`,
      "The tools' arguments (as a caller sends them) and receipts as plain types, no zod and no server",
      `package: new RetrysafeClient<${name}>(…). Regenerate it when a schema changes; do not edit it.`,
    ].join('\n'),
  });
  if (values.out === undefined) {
    process.stdout.write(source);
    return 0;
  }
  const out = resolve(cwd, values.out);
  mkdirSync(dirname(out), { recursive: true });
  writeFileSync(out, source);
  console.log(
    `retrysafe types: wrote ${name} (${config.tools.length} tool(s): ${config.tools.map((tool) => tool.name).join(', ')}) ` +
      `to ${relative(cwd, out) || out}, from ${relative(cwd, file)}`,
  );
  return 0;
}
