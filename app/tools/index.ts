import { registered } from 'retrysafe/lambda';
import { closeTicket } from './close-ticket';
import { createInvoice } from './create-invoice';
import { createTicket } from './create-ticket';
import { refund } from './refund';
import { sendEmail } from './send-email';

/**
 * Every tool of the example app, in the order agents see them: its one list of tools. Its routes, its
 * functions and their grants (app/stack.ts), `GET /tools`, the MCP listing and `retrysafe dev`
 * (retrysafe.config.ts) are derived from it. A line is a tool module and the type of its Lambda entry
 * (`registered`, retrysafe/lambda: the compiler checks that lambdas/<name>.ts serves that tool).
 */
export const TOOLS = [
  registered<typeof import('../../lambdas/create_invoice')>(createInvoice),
  registered<typeof import('../../lambdas/refund')>(refund),
  registered<typeof import('../../lambdas/create_ticket')>(createTicket),
  registered<typeof import('../../lambdas/close_ticket')>(closeTicket),
  registered<typeof import('../../lambdas/send_email')>(sendEmail),
] as const;

/** A registered tool. */
export type RegisteredTool = (typeof TOOLS)[number];
/** The name of a registered tool. */
export type ToolName = RegisteredTool['name'];
