import type { LambdaHandler } from '../lib/http/boundary';
import { handler as close_ticket } from './close_ticket';
import { handler as create_invoice } from './create_invoice';
import { handler as create_ticket } from './create_ticket';
import { handler as get_invoice } from './get_invoice';
import { handler as get_operation } from './get_operation';
import { handler as get_ticket } from './get_ticket';
import { handler as health } from './health';
import { handler as list_tools } from './list_tools';
import { handler as not_found } from './not_found';
import { handler as refund } from './refund';
import { handler as send_email } from './send_email';

/**
 * Every Lambda entry point by name, for the local server (each is deployed from its own file). The
 * names are `RouteDefinition.lambda`; a test checks that every route has its handler.
 */
export const HANDLERS: Readonly<Record<string, LambdaHandler>> = {
  close_ticket,
  create_invoice,
  create_ticket,
  get_invoice,
  get_operation,
  get_ticket,
  health,
  list_tools,
  not_found,
  refund,
  send_email,
};
