import { openApiEntry } from 'retrysafe/lambda/listing';
import { TOOLS } from '../tools';

export const handler = openApiEntry(TOOLS);
