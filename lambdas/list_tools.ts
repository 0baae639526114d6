import { listToolsEntry } from 'retrysafe/lambda/listing';
import { TOOLS } from '../app/tools';

/** GET /tools — every tool with its JSON Schema and annotations. */
export const handler = listToolsEntry(TOOLS);
