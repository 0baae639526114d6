import type * as z from 'zod/mini';
import type { JsonObject } from '../../lib/idempotency';
import { toolEntry as appToolEntry } from '../../lib/lambda/tool';
import { composeExampleServices, type ExampleServices } from '../../lib/services';
import type { ToolHandler, ToolModule } from '../../lib/tools/tool-module';

/**
 * An example tool's Lambda handler, composed the way an app composes its own (`retrysafe/lambda/tool`):
 * the tool bound to the example's services, behind the runtime.
 */
export function toolEntry<N extends string, S extends z.ZodMiniObject, R extends JsonObject>(
  module: ToolModule<N, S, R, ExampleServices>,
): ToolHandler<N> {
  return appToolEntry(module, composeExampleServices);
}
