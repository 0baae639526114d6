import { toolLambda } from '../lib/http/lambdas';

/** POST /tools/close_ticket — behind API Gateway's JWT authorizer. */
export const handler = toolLambda('close_ticket');
