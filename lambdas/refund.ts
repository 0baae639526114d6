import { toolLambda } from '../lib/http/write';
import { createRefundTool } from '../lib/tools/refund';

/** POST /tools/refund — behind API Gateway's JWT authorizer. */
export const handler = toolLambda(createRefundTool);
