import { readEntry } from 'retrysafe/lambda/read';
import { getInvoice } from '../app/reads';
import { services } from '../app/services';

/** GET /invoices/{invoice_id} — an invoice of the caller's tenant, with its refund. */
export const handler = readEntry(getInvoice, services);
