/**
 * `npm run openapi -- [PATH] [--server URL]`: writes the OpenAPI 3.1 document of the registry's API to
 * PATH (default ./openapi.json), for platforms that import tools from it. `--server` names the API's
 * base URL (most importers want one); without it the document has no `servers`.
 */
import { writeFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { openApiDocument } from '../lib/openapi/document';
import { TOOLS } from '../lib/tools/registry';
import { version } from '../package.json';

function main(): void {
  const { values, positionals } = parseArgs({ options: { server: { type: 'string' } }, allowPositionals: true });
  if (positionals.length > 1) {
    console.error('usage: npm run openapi -- [PATH] [--server URL]');
    process.exit(2);
  }
  const path = resolve(positionals[0] ?? 'openapi.json');
  const document = openApiDocument(TOOLS, { version, ...(values.server ? { serverUrl: values.server } : {}) });
  writeFileSync(path, `${JSON.stringify(document, null, 2)}\n`);
  console.log(`${path}: OpenAPI ${document.openapi}, ${Object.keys(document.paths).length} paths`);
}

main();
