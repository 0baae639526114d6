import { toolLambda } from '../lib/http/lambdas';

/** POST /tools/create_ticket — behind API Gateway's JWT authorizer. */
export const handler = toolLambda('create_ticket');
