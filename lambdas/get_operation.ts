import { getOperationHandler } from '../lib/http/reads';
import { createToolRuntime } from '../lib/tools/tool-runtime';
import { services } from './shared/process';

/**
 * GET /tools/{tool}/operations/{key} — the caller's own record of a client key. The tools' names come
 * from the environment (`TOOL_NAMES`, set by the stack from the registry), so this bundle carries no tool.
 */
export const handler = getOperationHandler(
  { runtime: createToolRuntime(services), toolNames: (process.env.TOOL_NAMES ?? '').split(',').filter(Boolean) },
  services.logger,
);
