import { listToolsEntry } from '../lib/lambda/listing';
import { TOOLS } from '../lib/tools/registry';

/** GET /tools — every tool with its JSON Schema and annotations. */
export const handler = listToolsEntry(TOOLS);
