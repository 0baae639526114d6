/**
 * `npm run openapi -- [PATH] [--server URL]`: writes the OpenAPI 3.1 document of the registry's API to
 * PATH (default ./openapi.json), for platforms that import tools from it. `--server` names the API's
 * base URL (most importers want one); without it the document has no `servers`.
 */
import { writeFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { openApiDocument } from '../lib/openapi/document';
import { TOOLS } from '../lib/tools/registry';
import { version } from '../package.json';
import { commandFlags } from './cli-args';

function main(): void {
  const argv = process.argv.slice(2);
  const given = argv[0] !== undefined && !argv[0].startsWith('-') ? argv[0] : undefined;
  const values = commandFlags(
    `usage: npm run openapi -- [PATH] [--server URL]

Writes the OpenAPI 3.1 document of the tools' routes to PATH (default openapi.json).

  --server URL   the document's server URL (default: none)`,
    { server: { type: 'string' } },
    given === undefined ? argv : argv.slice(1),
  );
  const path = resolve(given ?? 'openapi.json');
  const document = openApiDocument(TOOLS, { version, ...(values.server ? { serverUrl: values.server } : {}) });
  writeFileSync(path, `${JSON.stringify(document, null, 2)}\n`);
  console.log(`${path}: OpenAPI ${document.openapi}, ${Object.keys(document.paths).length} paths`);
}

main();
