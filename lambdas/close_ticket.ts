import { toolEntry } from 'retrysafe/lambda/tool';
import { services } from '../app/services';
import { closeTicket } from '../app/tools/close-ticket';

/** POST /tools/close_ticket — behind API Gateway's JWT authorizer. */
export const handler = toolEntry(closeTicket, services);
