import { closeTicket } from '../lib/tools/close-ticket';
import { toolEntry } from './shared/tool-entry';

/** POST /tools/close_ticket — behind API Gateway's JWT authorizer. */
export const handler = toolEntry(closeTicket);
