import { toolLambda } from '../lib/http/write';
import { createCreateTicketTool } from '../lib/tools/create-ticket';

/** POST /tools/create_ticket — behind API Gateway's JWT authorizer. */
export const handler = toolLambda(createCreateTicketTool);
