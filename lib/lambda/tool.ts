import type * as z from 'zod/mini';
import { callerKeyFromEnv } from '../agentcore/caller-key';
import { gatewayWrites } from '../agentcore/write';
import { toolHandler } from '../http/write';
import type { JsonObject } from '../idempotency';
import type { ToolModule } from '../tools/tool-module';
import { type ComposeServices, processServices } from './core-services';
import type { ToolHandler } from './registered';
import { createToolRuntime } from './runtime';

/**
 * `POST /tools/<name>`: one tool, bound to the services `compose` builds, behind the idempotency runtime —
 * and, on a function the construct made an AgentCore Gateway's target (`RETRYSAFE_AGENTCORE_TARGET`), the
 * tool's Lambda target, its callers checked with the key `RETRYSAFE_CALLER_KEY_SECRET` names.
 */
export function toolEntry<N extends string, S extends z.ZodMiniObject, R extends JsonObject, Svc>(
  module: ToolModule<N, S, R, Svc>,
  compose: ComposeServices<Svc>,
  env: NodeJS.ProcessEnv = process.env,
): ToolHandler<N> {
  const core = processServices(env);
  return toolHandler(module, {
    services: compose(core),
    runtime: createToolRuntime(core, env),
    logger: core.logger,
    // Read as `process.env.…` (not `env`): the construct folds it into each bundle (`BUNDLING.define`),
    // and a function that is no gateway's target ships none of the gateway's code.
    ...(process.env.RETRYSAFE_AGENTCORE_TARGET === 'true' ? { gateway: gatewayWrites(callerKeyFromEnv(env)) } : {}),
  });
}
