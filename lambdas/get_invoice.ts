/** GET /invoices/{invoice_id} — an invoice of the caller's tenant, with its refund. */
export { getInvoiceLambda as handler } from '../lib/http/lambdas';
