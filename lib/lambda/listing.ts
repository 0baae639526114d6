import type { LambdaHandler } from '../http/boundary';
import { listToolsHandler } from '../http/list-tools';
import { openApiHandler } from '../http/openapi';
import type { AnyReadModule } from '../tools/read-module';
import type { AnyToolModule } from '../tools/tool-module';
import { createCoreServices } from './core-services';

/** `GET /tools`: every tool with its JSON Schemas and annotations. No services: no table is touched. */
export function listToolsEntry(tools: readonly AnyToolModule[], env: NodeJS.ProcessEnv = process.env): LambdaHandler {
  return listToolsHandler(tools, createCoreServices(env).logger);
}

/**
 * `GET /openapi.json`: the OpenAPI 3.1 document of `tools` and the app's own `reads` — the one list its
 * config, its MCP entry and its construct take too (`[]` for an app without reads: the document must not
 * miss a read the API serves, nor name one it does not). No token, no table.
 */
export function openApiEntry(tools: readonly AnyToolModule[], reads: readonly AnyReadModule[]): LambdaHandler {
  return openApiHandler(tools, reads);
}
