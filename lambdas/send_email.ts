import { toolEntry } from 'retrysafe/lambda/tool';
import { services } from '../app/services';
import { sendEmail } from '../app/tools/send-email';

/** POST /tools/send_email — behind API Gateway's JWT authorizer. */
export const handler = toolEntry(sendEmail, services);
