import type * as z from 'zod/mini';
import type { JsonObject } from '../../lib/idempotency';
import { toolEntry as appToolEntry } from '../../lib/lambda/tool';
import { type ExampleServices, exampleServices } from '../../lib/services';
import { tableName } from '../../lib/store/tables';
import type { ToolHandler, ToolModule } from '../../lib/tools/tool-module';

/**
 * An example tool's Lambda handler, composed the way an app composes its own (`retrysafe/lambda/tool`):
 * the tool bound to the example's services, behind the runtime.
 */
export function toolEntry<N extends string, S extends z.ZodMiniObject, R extends JsonObject>(
  module: ToolModule<N, S, R, ExampleServices>,
): ToolHandler<N> {
  // The example's tables by `<NAME>_TABLE` (what the construct sets), else their local names (`tableName`).
  return appToolEntry(module, ({ documents }) => exampleServices({ documents, tableName: (id) => tableName(id) }));
}
