import type { JWTPayload } from 'jose';
import type { Identity } from '../idempotency';

/** Token claim that names the tenant, as the JWT authorizer passes it on. @default 'tenant_id' */
export function tenantClaimName(env: NodeJS.ProcessEnv = process.env): string {
  return env.TENANT_CLAIM || 'tenant_id';
}

/** Verifies a bearer token and returns its token claims, every value a string; throws when invalid. */
export type TokenVerifier = (token: string) => Promise<Record<string, string>>;

/** Token claims as API Gateway's JWT authorizer passes them on: every value a string. */
export function stringClaims(payload: JWTPayload): Record<string, string> {
  return Object.fromEntries(
    Object.entries(payload).map(([name, value]) => [name, typeof value === 'string' ? value : JSON.stringify(value)]),
  );
}

/** Tenant (the `TENANT_CLAIM` token claim) and user (`sub`), or undefined when either is missing. */
export function identityFromTokenClaims(
  tokenClaims: Readonly<Record<string, string | undefined>>,
  env: NodeJS.ProcessEnv = process.env,
): Identity | undefined {
  const tenant = tokenClaims[tenantClaimName(env)];
  const user = tokenClaims.sub;
  if (typeof tenant !== 'string' || tenant === '' || typeof user !== 'string' || user === '') return undefined;
  return { tenant, user };
}
