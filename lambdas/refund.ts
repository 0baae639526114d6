import { toolEntry } from 'retrysafe/lambda/tool';
import { services } from '../app/services';
import { refund } from '../app/tools/refund';

/** POST /tools/refund — behind API Gateway's JWT authorizer. */
export const handler = toolEntry(refund, services);
