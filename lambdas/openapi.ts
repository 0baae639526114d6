import { openApiHandler } from '../lib/http/openapi';
import { TOOLS } from '../lib/tools/registry';

/** GET /openapi.json — the OpenAPI 3.1 document, derived from the tool registry. No token. */
export const handler = openApiHandler(TOOLS);
