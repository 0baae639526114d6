import type * as z from 'zod/mini';
import { toolHandler } from '../../lib/http/write';
import type { JsonObject } from '../../lib/idempotency';
import type { ToolHandler, ToolModule } from '../../lib/tools/tool-module';
import { createToolRuntime } from '../../lib/tools/tool-runtime';
import { services } from './process';

/** A tool's Lambda handler: the tool bound to this process's services, behind the idempotency runtime. */
export function toolEntry<N extends string, S extends z.ZodMiniObject, R extends JsonObject>(
  module: ToolModule<N, S, R>,
): ToolHandler<N> {
  return toolHandler(module, { services, runtime: createToolRuntime(services), logger: services.logger });
}
