import { openApiEntry } from 'retrysafe/lambda/listing';
import { READS } from '../app/reads';
import { TOOLS } from '../app/tools';

/** GET /openapi.json — the OpenAPI 3.1 document of the example's tools and reads. No token. */
export const handler = openApiEntry(TOOLS, READS);
