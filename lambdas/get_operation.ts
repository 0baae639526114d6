import { getOperationHandler } from '../lib/http/reads';
import { createToolRuntime } from '../lib/tools/tool-runtime';
import { services } from './shared/process';

/** GET /tools/{tool}/operations/{key} — the caller's own record of a client key. */
export const handler = getOperationHandler(createToolRuntime(services), services.logger);
