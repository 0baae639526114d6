import { withErrorBoundary } from '../lib/http/boundary';
import { handleGetInvoice } from '../lib/http/reads';
import { services } from '../lib/services';

/** GET /invoices/{invoice_id} — an invoice of the caller's tenant, with its refund. */
export const handler = withErrorBoundary('get_invoice', async function getInvoice(event) {
  return handleGetInvoice(services().invoices, event);
});
