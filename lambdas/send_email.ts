import { toolLambda } from '../lib/http/lambdas';

/** POST /tools/send_email — behind API Gateway's JWT authorizer. */
export const handler = toolLambda('send_email');
