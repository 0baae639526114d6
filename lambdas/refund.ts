import { toolLambda } from '../lib/http/lambdas';

/** POST /tools/refund — behind API Gateway's JWT authorizer. */
export const handler = toolLambda('refund');
