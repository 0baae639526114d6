import { toolLambda } from '../lib/http/lambdas';

/** POST /tools/create_invoice — behind API Gateway's JWT authorizer. */
export const handler = toolLambda('create_invoice');
