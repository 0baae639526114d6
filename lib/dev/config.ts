/**
 * `retrysafe.config.ts`: what the `retrysafe` command (`dev`, `calls`, `complete`, `erase`) knows of an
 * app — its tools, the one function that composes their services, and its tables. The same three things
 * its Lambda entries and its CDK app are built from, so the local server runs what the stack deploys.
 *
 * Types and a pass-through only: a config file loads nothing of the runtime through this module.
 */

import { entryNameProblems, readRouteProblems } from '../api/routes';
import type { ComposeServices, ReadsOver, ToolsOver } from '../lambda/core-services';
import type { TableSchema } from '../store/tables';
import type { AnyReadModule } from '../tools/read-module';
import type { AnyToolModule } from '../tools/tool-module';

/** An app, as the `retrysafe` command serves and operates it. */
export interface RetrysafeConfig<Svc = unknown> {
  /** The app's tools: the list its MCP entry and its completer serve. */
  readonly tools: ToolsOver<NoInfer<Svc>>;
  /** The app's services composition: the one function its entry points pass (`toolEntry(tool, services)`). */
  readonly services: ComposeServices<Svc>;
  /**
   * The app's own tables, by the names in the tools' `access` — the schemas its CDK app
   * (`definedTable`) and its tests (`startTestStore`) build them from. `retrysafe dev` creates them on
   * DynamoDB Local; `retrysafe erase` erases a tenant's items where a schema declares `tenantAttribute`.
   * @default {} (the idempotency table only)
   */
  readonly tables?: Readonly<Record<string, TableSchema>>;
  /**
   * The app's own reads (`defineReadModule`): each served over REST (`GET <path>`, as its `readEntry`
   * serves it) and MCP (as its MCP entry's `reads`), bound to the same services as the tools.
   * @default none (`get_operation` only)
   */
  readonly reads?: ReadsOver<NoInfer<Svc>>;
}

/**
 * Declares an app's config (`export default defineConfig({ tools, services, tables })`): checks nothing at
 * run time, but lets the compiler check that every tool's services are part of what `services` builds.
 */
export function defineConfig<Svc>(config: RetrysafeConfig<Svc>): RetrysafeConfig<Svc> {
  return config;
}

/** The table name the runtime keeps for itself. */
const RESERVED_TABLE = 'idempotency';

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * Every problem of a loaded config, each naming the field: what the types cannot catch (a file that
 * exports something else, a tool whose table is not declared, two tools of one name, a read named like a
 * built-in entry or routed at a path of the API's own or of another read).
 */
export function configProblems(config: unknown): string[] {
  if (!isObject(config))
    return ['the file exports no config: `export default defineConfig({ tools, services, tables })`'];
  const problems: string[] = [];
  const tools = config.tools;
  if (!Array.isArray(tools) || tools.length === 0) {
    problems.push('tools: the config exports no tools (a non-empty list of defineToolModule(...) values)');
  }
  if (typeof config.services !== 'function') {
    problems.push('services: not a function (the one `(core) => services` function the entry points pass)');
  }
  const reads = config.reads ?? [];
  if (!Array.isArray(reads)) problems.push('reads: not a list of defineReadModule(...) values');
  const tables = config.tables ?? {};
  if (!isObject(tables)) problems.push('tables: not an object of table schemas by name');
  const declared = isObject(tables) ? tables : {};
  for (const [name, schema] of Object.entries(declared)) {
    if (name === RESERVED_TABLE)
      problems.push(`tables.${name}: the idempotency table is the runtime's own; name it otherwise`);
    if (!isObject(schema) || !isObject(schema.partitionKey) || typeof schema.partitionKey.name !== 'string') {
      problems.push(`tables.${name}: no partitionKey ({ name, type: 'S' })`);
      continue;
    }
    if (schema.tenantAttribute !== undefined && schema.keptByErase !== undefined) {
      problems.push(
        `tables.${name}: declares both tenantAttribute and keptByErase; erase either reaches a table or keeps it`,
      );
    }
  }
  const names: string[] = [];
  const routes: Array<Pick<AnyReadModule, 'name' | 'path'>> = [];
  for (const [index, read] of (Array.isArray(reads) ? reads : []).entries()) {
    const module = read as Partial<AnyReadModule> | undefined;
    if (!isObject(module) || typeof module.name !== 'string' || typeof module.bind !== 'function') {
      problems.push(`reads[${index}]: not a read module (defineReadModule from retrysafe/tools)`);
      continue;
    }
    names.push(module.name);
    if (typeof module.path === 'string') routes.push({ name: module.name, path: module.path });
    for (const table of Object.keys(module.access ?? {})) {
      if (!Object.hasOwn(declared, table)) {
        problems.push(
          `reads.${module.name}.access: names the table ${table}, which the config's tables do not declare`,
        );
      }
    }
  }
  for (const [index, tool] of (Array.isArray(tools) ? tools : []).entries()) {
    const module = tool as Partial<AnyToolModule> | undefined;
    if (!isObject(module) || typeof module.name !== 'string' || typeof module.bind !== 'function') {
      problems.push(`tools[${index}]: not a tool module (defineToolModule from retrysafe/tools)`);
      continue;
    }
    names.push(module.name);
    for (const table of Object.keys(module.access ?? {})) {
      if (!Object.hasOwn(declared, table)) {
        problems.push(
          `tools.${module.name}.access: names the table ${table}, which the config's tables do not declare`,
        );
      }
    }
  }
  // As the construct checks them: one name each, none of retrysafe's own, each read at a route of its own.
  problems.push(...entryNameProblems(names), ...readRouteProblems(routes));
  return problems;
}
