import { sendEmail } from '../lib/tools/send-email';
import { toolEntry } from './shared/tool-entry';

/** POST /tools/send_email — behind API Gateway's JWT authorizer. */
export const handler = toolEntry(sendEmail);
