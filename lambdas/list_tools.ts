import { withErrorBoundary } from '../lib/http/boundary';
import { handleListTools } from '../lib/http/list-tools';
import { services } from '../lib/services';
import { createTools } from '../lib/tools';

/** GET /tools — every tool with its JSON Schema and annotations. */
export const handler = withErrorBoundary('list_tools', async function listTools(event) {
  return handleListTools(createTools(services()), event);
});
