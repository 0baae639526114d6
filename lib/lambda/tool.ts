import type * as z from 'zod/mini';
import { toolHandler } from '../http/write';
import type { JsonObject } from '../idempotency';
import type { ToolModule } from '../tools/tool-module';
import { type ComposeServices, processServices } from './core-services';
import type { ToolHandler } from './registered';
import { createToolRuntime } from './runtime';

/** `POST /tools/<name>`: one tool, bound to the services `compose` builds, behind the idempotency runtime. */
export function toolEntry<N extends string, S extends z.ZodMiniObject, R extends JsonObject, Svc>(
  module: ToolModule<N, S, R, Svc>,
  compose: ComposeServices<Svc>,
  env: NodeJS.ProcessEnv = process.env,
): ToolHandler<N> {
  const core = processServices(env);
  return toolHandler(module, { services: compose(core), runtime: createToolRuntime(core, env), logger: core.logger });
}
