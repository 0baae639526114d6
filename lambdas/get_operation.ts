import { withErrorBoundary } from '../lib/http/boundary';
import { handleGetOperation } from '../lib/http/reads';
import { runtime } from '../lib/runtime';

/** GET /tools/{tool}/operations/{key} — the caller's own record of a client key. */
export const handler = withErrorBoundary('get_operation', async function getOperation(event) {
  return handleGetOperation(runtime(), event);
});
