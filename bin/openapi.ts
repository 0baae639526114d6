/**
 * `npm run openapi -- [PATH] [--server URL]`: writes the OpenAPI 3.1 document of the registry's API to
 * PATH (default ./openapi.json), for platforms that import tools from it. `--server` names the API's
 * base URL (most importers want one); without it the document has no `servers`.
 */
import { writeFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { READS } from '../app/reads';
import { TOOLS } from '../app/tools';
import { openApiDocument } from '../lib/openapi/document';
import { version } from '../package.json';
import { commandFlags, refuse } from './cli-args';

const USAGE = `usage: npm run openapi -- [PATH] [--server URL]

Writes the OpenAPI 3.1 document of the tools' routes to PATH (default openapi.json).

  --server URL   the document's server URL (default: none)`;

/** PATH, before or after the flags (the word after a bare `--server` is its value), and the flags. */
function pathAndFlags(argv: readonly string[]): { paths: string[]; flags: string[] } {
  const paths: string[] = [];
  const flags: string[] = [];
  for (let at = 0; at < argv.length; at++) {
    const arg = argv[at]!;
    if (arg === '--') {
      paths.push(...argv.slice(at + 1));
      break;
    }
    if (!arg.startsWith('-') || arg === '-') paths.push(arg);
    else if (arg === '--server' && at + 1 < argv.length) flags.push(arg, argv[++at]!);
    else flags.push(arg);
  }
  return { paths, flags };
}

function main(): void {
  const { paths, flags } = pathAndFlags(process.argv.slice(2));
  const values = commandFlags(USAGE, { server: { type: 'string' } }, flags);
  if (paths.length > 1) refuse(`Unexpected argument '${paths[1]}': one PATH at most`, USAGE);
  const path = resolve(paths[0] ?? 'openapi.json');
  const document = openApiDocument(TOOLS, {
    reads: READS,
    version,
    ...(values.server ? { serverUrl: values.server } : {}),
  });
  writeFileSync(path, `${JSON.stringify(document, null, 2)}\n`);
  console.log(`${path}: OpenAPI ${document.openapi}, ${Object.keys(document.paths).length} paths`);
}

main();
