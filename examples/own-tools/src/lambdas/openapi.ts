import { openApiEntry } from 'retrysafe/lambda/listing';
import { READS } from '../reads';
import { TOOLS } from '../tools';

export const handler = openApiEntry(TOOLS, READS);
