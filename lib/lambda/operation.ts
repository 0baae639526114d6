import type { LambdaHandler } from '../http/boundary';
import { getOperationHandler } from '../http/reads';
import { processServices } from './core-services';
import { createToolRuntime } from './runtime';

/**
 * `GET /tools/{tool}/operations/{key}`: the caller's own record of a client key. The tools' names come
 * from the environment (`TOOL_NAMES`, set by the construct), so this entry carries no tool.
 */
export function getOperationEntry(env: NodeJS.ProcessEnv = process.env): LambdaHandler {
  const core = processServices(env);
  const toolNames = (env.TOOL_NAMES ?? '').split(',').filter(Boolean);
  return getOperationHandler({ runtime: createToolRuntime(core, env), toolNames }, core.logger);
}
