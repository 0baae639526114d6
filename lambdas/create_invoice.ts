import { createInvoice } from '../lib/tools/create-invoice';
import { toolEntry } from './shared/tool-entry';

/** POST /tools/create_invoice — behind API Gateway's JWT authorizer. */
export const handler = toolEntry(createInvoice);
