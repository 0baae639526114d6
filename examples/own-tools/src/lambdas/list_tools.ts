import { listToolsEntry } from 'retrysafe/lambda/listing';
import { TOOLS } from '../tools';

export const handler = listToolsEntry(TOOLS);
