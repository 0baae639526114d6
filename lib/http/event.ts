import type { APIGatewayProxyEventV2WithJWTAuthorizer } from 'aws-lambda';
import { identityFromTokenClaims } from '../auth/token-claims';
import type { Identity } from '../idempotency';

/** The events every handler takes: API Gateway HTTP API, payload 2.0, behind the JWT authorizer. */
export type ApiEvent = APIGatewayProxyEventV2WithJWTAuthorizer;

/** Tenant and user from the token claims the authorizer verified — never from the body or the path. */
export function identityFromEvent(event: ApiEvent): Identity | undefined {
  return identityFromTokenClaims(
    (event.requestContext?.authorizer?.jwt?.claims ?? {}) as Record<string, string | undefined>,
  );
}

/** A request header, whatever the case of its name. */
export function header(event: ApiEvent, name: string): string | undefined {
  const wanted = name.toLowerCase();
  for (const [key, value] of Object.entries(event.headers ?? {})) {
    if (key.toLowerCase() === wanted) return value;
  }
  return undefined;
}

/** The request body as text (API Gateway may hand it over base64-encoded). */
export function bodyText(event: ApiEvent): string {
  if (!event.body) return '';
  return event.isBase64Encoded ? Buffer.from(event.body, 'base64').toString('utf8') : event.body;
}

/** A path parameter, URL-decoded once (API Gateway passes them as they were in the path). */
export function pathParameter(event: ApiEvent, name: string): string | undefined {
  const raw = event.pathParameters?.[name];
  if (raw === undefined) return undefined;
  try {
    return decodeURIComponent(raw);
  } catch {
    return undefined;
  }
}

/** What a request without a usable identity is told. */
export const UNAUTHORIZED =
  'authorization: a valid bearer token is required, its tenant claim and sub each a string of 1-256 characters';
