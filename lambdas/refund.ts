import type { APIGatewayProxyEventV2WithJWTAuthorizer, Context } from 'aws-lambda';
import { handleToolEvent } from '../lib/http/tool-handler';
import { services } from '../lib/services';

/** POST /tools/refund — behind API Gateway's JWT authorizer. */
export async function handler(event: APIGatewayProxyEventV2WithJWTAuthorizer, context: Context) {
  const { runtime, tools } = services();
  return handleToolEvent(runtime, tools.refund, event, context);
}
