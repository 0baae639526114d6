import { getInvoiceHandler } from '../lib/http/reads';
import { services } from './shared/process';

/** GET /invoices/{invoice_id} — an invoice of the caller's tenant, with its refund. */
export const handler = getInvoiceHandler(services);
