import { createTicket } from '../lib/tools/create-ticket';
import { toolEntry } from './shared/tool-entry';

/** POST /tools/create_ticket — behind API Gateway's JWT authorizer. */
export const handler = toolEntry(createTicket);
