import { toolLambda } from '../lib/http/write';
import { createCloseTicketTool } from '../lib/tools/close-ticket';

/** POST /tools/close_ticket — behind API Gateway's JWT authorizer. */
export const handler = toolLambda(createCloseTicketTool);
