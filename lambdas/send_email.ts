import { toolLambda } from '../lib/http/write';
import { createSendEmailTool } from '../lib/tools/send-email';

/** POST /tools/send_email — behind API Gateway's JWT authorizer. */
export const handler = toolLambda(createSendEmailTool);
