import { listToolsHandler } from '../lib/http/list-tools';
import { TOOLS } from '../lib/tools/registry';
import { services } from './shared/process';

/** GET /tools — every tool with its JSON Schema and annotations. */
export const handler = listToolsHandler(TOOLS, services.logger);
