import type { JWTPayload } from 'jose';
import type { Identity } from '../idempotency';

/** Token claim that names the tenant, as the JWT authorizer passes it on. @default 'tenant_id' */
export function tenantClaimName(env: NodeJS.ProcessEnv = process.env): string {
  return env.TENANT_CLAIM || 'tenant_id';
}

/**
 * Verifies a bearer token and returns its token claims, every value a string; throws when invalid, or
 * `VerifierUnavailableError` when it cannot tell (its keys cannot be fetched).
 */
export type TokenVerifier = (token: string) => Promise<Record<string, string>>;

/**
 * The verifier cannot tell whether a token is valid: the issuer's signing keys could not be fetched.
 * Not the token's fault — answered 503 with Retry-After, never 401, so clients keep their tokens.
 */
export class VerifierUnavailableError extends Error {
  constructor(
    message: string,
    /** How long until the verifier tries again. */
    readonly retryAfterSeconds: number,
    options?: ErrorOptions,
  ) {
    super(message, options);
    this.name = 'VerifierUnavailableError';
  }
}

/**
 * A claim naming the caller (the tenant claim or `sub`) that is not a string: refused, never stringified
 * — `["x","y"]` would be a tenant of its own, and `123` the same tenant as `"123"`.
 */
export class ClaimNotStringError extends Error {
  readonly code = 'ERR_CLAIM_NOT_STRING';
  constructor(readonly claim: string) {
    super(`the ${claim} claim is not a string`);
    this.name = 'ClaimNotStringError';
  }
}

/**
 * Token claims as API Gateway's JWT authorizer passes them on: every value a string. A tenant claim or
 * `sub` that is not a string is refused (`ClaimNotStringError`) — this verifier sees the token's types;
 * behind API Gateway only `identityFromTokenClaims`' check of the flattened value is left.
 */
export function stringClaims(payload: JWTPayload, env: NodeJS.ProcessEnv = process.env): Record<string, string> {
  for (const name of [tenantClaimName(env), 'sub']) {
    if (payload[name] !== undefined && typeof payload[name] !== 'string') throw new ClaimNotStringError(name);
  }
  return Object.fromEntries(
    Object.entries(payload).map(([name, value]) => [name, typeof value === 'string' ? value : JSON.stringify(value)]),
  );
}

/**
 * Whether a token was issued to `audience`, decided as API Gateway's JWT authorizer decides it: by `aud`
 * (a string or a list) when the token has one, else by `client_id` — a Cognito access token names its
 * app client there and carries no `aud`.
 */
export function isIssuedTo(payload: JWTPayload, audience: string): boolean {
  if (payload.aud !== undefined) return [payload.aud].flat().includes(audience);
  return payload.client_id === audience;
}

/** The longest tenant or user accepted (the idempotency runtime's limit): a longer one is a 401, not a 500. */
export const MAX_IDENTITY_LENGTH = 256;

/**
 * API Gateway's JWT authorizer hands the function every claim as a string: a list as `[x y]`, a map as
 * `map[k:v]` (Go's formatting), a number or a boolean as its digits or word. A list or a map can still be
 * told apart there and is refused with the rest; `123` cannot be told from `"123"` once flattened — only a
 * verifier that sees the token (the MCP function's, the local server's: `stringClaims`) refuses it.
 */
const FLATTENED_LIST_OR_MAP = /^(map)?\[.*\]$/s;

function isIdentityPart(value: string | undefined): value is string {
  return (
    typeof value === 'string' &&
    value !== '' &&
    value.length <= MAX_IDENTITY_LENGTH &&
    !FLATTENED_LIST_OR_MAP.test(value)
  );
}

/** Tenant (the `TENANT_CLAIM` token claim) and user (`sub`), or undefined when either is missing or too long. */
export function identityFromTokenClaims(
  tokenClaims: Readonly<Record<string, string | undefined>>,
  env: NodeJS.ProcessEnv = process.env,
): Identity | undefined {
  const tenant = tokenClaims[tenantClaimName(env)];
  const user = tokenClaims.sub;
  if (!isIdentityPart(tenant) || !isIdentityPart(user)) return undefined;
  return { tenant, user };
}

/**
 * Why a token was refused, in words a developer can act on (the 401's message and `error_description`):
 * expired, issued by another issuer or for another audience, a signature this server's keys do not
 * verify, or not a JWT at all (a token that verifies but names no caller: `noCallerRefusal`). Read from jose's error
 * codes (not its classes: an app may load another copy of jose); nothing of the token is echoed.
 */
export function tokenRefusal(error: unknown): string {
  const { code, claim } = (error ?? {}) as { code?: unknown; claim?: unknown };
  switch (code) {
    case 'ERR_CLAIM_NOT_STRING':
      return `the token's ${typeof claim === 'string' ? claim : ''} claim is not a string; a tenant and a user (sub) are strings`;
    case 'ERR_JWT_EXPIRED':
      return 'the token has expired; get a new one';
    case 'ERR_JWT_CLAIM_VALIDATION_FAILED':
      if (claim === 'iss') return 'the token was issued by another issuer than this server trusts (iss)';
      if (claim === 'aud') return 'the token was issued for another audience (aud)';
      if (claim === 'nbf') return 'the token is not valid yet (nbf)';
      if (claim === 'exp') return 'the token has no expiry (exp)';
      return `the token's ${typeof claim === 'string' ? claim : ''} claim is not accepted`.replace('  ', ' ');
    case 'ERR_JWS_SIGNATURE_VERIFICATION_FAILED':
    case 'ERR_JWKS_NO_MATCHING_KEY':
      return "the token's signature does not verify with this server's keys (signed by another issuer, or a server restarted with a new key)";
    case 'ERR_JOSE_ALG_NOT_ALLOWED':
      return "the token's signing algorithm is not accepted";
    case 'ERR_JWS_INVALID':
    case 'ERR_JWT_INVALID':
    case 'ERR_JOSE_NOT_SUPPORTED':
      return 'the token is not a valid JWT';
    default:
      return 'the token is not valid';
  }
}

/** Why a token that verifies is refused when it names no caller (`identityFromTokenClaims` found none). */
export function noCallerRefusal(env: NodeJS.ProcessEnv = process.env): string {
  return `the token does not name a tenant (${tenantClaimName(env)}) and a user (sub) of at most ${MAX_IDENTITY_LENGTH} characters`;
}
