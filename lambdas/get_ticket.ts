import { withErrorBoundary } from '../lib/http/boundary';
import { handleGetTicket } from '../lib/http/reads';
import { services } from '../lib/services';

/** GET /tickets/{ticket_key} — a ticket of the caller's tenant. */
export const handler = withErrorBoundary('get_ticket', async function getTicket(event) {
  return handleGetTicket(services().tickets, event);
});
