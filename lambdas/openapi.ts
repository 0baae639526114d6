import { EXAMPLE_READS } from '../lib/api/routes';
import { openApiEntry } from '../lib/lambda/listing';
import { TOOLS } from '../lib/tools/registry';

/** GET /openapi.json — the OpenAPI 3.1 document, derived from the tool registry and the example's reads. No token. */
export const handler = openApiEntry(TOOLS, EXAMPLE_READS);
