import { toolLambda } from '../lib/http/write';
import { createCreateInvoiceTool } from '../lib/tools/create-invoice';

/** POST /tools/create_invoice — behind API Gateway's JWT authorizer. */
export const handler = toolLambda(createCreateInvoiceTool);
