import type { APIGatewayProxyEventV2WithJWTAuthorizer, Context } from 'aws-lambda';
import { bareRefund } from './bare-powertools';

const refund = bareRefund();

/** The bare baseline's `POST /tools/refund`: the body's arguments, the authorizer's identity, one JSON answer. */
export async function handler(event: APIGatewayProxyEventV2WithJWTAuthorizer, context: Context) {
  const claims = event.requestContext.authorizer.jwt.claims as Record<string, string>;
  const body = JSON.parse(event.body ?? '{}');
  const answer = await refund(
    {
      tenant: claims.tenant_id!,
      user: claims.sub!,
      key: body.idempotency_key,
      invoice_id: body.invoice_id,
      amount: body.amount,
    },
    context,
  );
  return {
    statusCode: answer.ok ? 200 : 400,
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(answer),
  };
}
