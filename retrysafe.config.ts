/**
 * The example app, as `retrysafe dev` (`npm start`), `retrysafe calls`, `complete` and `erase` see it: its
 * five tools, the services its Lambda entries compose, its tables and its reads — the same lists the stack
 * (lib/infra/retrysafe-stack.ts) deploys. An app of its own writes the same file over its own tools
 * (examples/own-tools/retrysafe.config.ts).
 */
import { defineConfig } from './lib/dev/config';
import { exampleReads } from './lib/http/handlers';
import { exampleServices } from './lib/services';
import { TABLES } from './lib/store/tables';
import { TOOLS } from './lib/tools/registry';

const { idempotency: _runtimeTable, ...tables } = TABLES;

export default defineConfig({
  tools: TOOLS,
  services: (core) => ({ client: core.client, documents: core.documents, logger: core.logger, ...exampleServices(core) }),
  tables,
  reads: (services) => exampleReads(services).reads,
  mcpReads: (services) => exampleReads(services).mcpReads,
});
