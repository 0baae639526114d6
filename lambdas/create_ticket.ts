import { toolEntry } from 'retrysafe/lambda/tool';
import { services } from '../app/services';
import { createTicket } from '../app/tools/create-ticket';

/** POST /tools/create_ticket — behind API Gateway's JWT authorizer. */
export const handler = toolEntry(createTicket, services);
