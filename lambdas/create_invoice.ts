import { toolEntry } from 'retrysafe/lambda/tool';
import { services } from '../app/services';
import { createInvoice } from '../app/tools/create-invoice';

/** POST /tools/create_invoice — behind API Gateway's JWT authorizer. */
export const handler = toolEntry(createInvoice, services);
