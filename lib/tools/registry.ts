import { closeTicket } from './close-ticket';
import { createInvoice } from './create-invoice';
import { createTicket } from './create-ticket';
import { refund } from './refund';
import { sendEmail } from './send-email';
import { registered } from './tool-module';

/**
 * Every tool retrysafe serves, in the order agents see them: the one list of tools. Routes, the local
 * server's handlers, each function's grants, `GET /tools` and the MCP listing are derived from it.
 * A line is a tool module and the type of its Lambda entry (see `registered`).
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
