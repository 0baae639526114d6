import {
  createRemoteJWKSet,
  errors,
  type FlattenedJWSInput,
  type CryptoKey as JoseCryptoKey,
  type JWSHeaderParameters,
  jwtVerify,
  type KeyObject,
} from 'jose';
import { isIssuedTo, stringClaims, type TokenVerifier, VerifierUnavailableError } from './token-claims';

export interface JwksVerifierOptions {
  /** The OIDC issuer tokens must name (`iss`). */
  readonly issuer: string;
  /**
   * Whom tokens must be issued to: their `aud`, or, in a token without `aud` (a Cognito access token),
   * their `client_id` — as API Gateway's JWT authorizer checks it.
   */
  readonly audience: string;
  /**
   * Where the issuer publishes its signing keys.
   * @default `${issuer}/.well-known/jwks.json` (Amazon Cognito's location)
   */
  readonly jwksUrl?: string;
  /**
   * How long one JWKS fetch may take.
   * @default 5_000 (jose's)
   */
  readonly fetchTimeoutMs?: number;
  /**
   * After a failed fetch, how long every token is answered "unavailable" without fetching again (a
   * short negative cache: an identity-provider outage is not hammered by every request).
   * @default 5_000
   */
  readonly unavailableForMs?: number;
  /** The clock the negative cache reads. @default Date.now */
  readonly now?: () => number;
}

/**
 * What jose's key lookup throws when the token, not the key set, is at fault: no key for its `kid`,
 * several, or an algorithm the key does not allow. Anything else thrown while looking up a key comes
 * from fetching the set (a timeout, a refused connection, a non-200, a body that is no JWKS).
 */
const TOKEN_FAULTS = [errors.JWKSNoMatchingKey, errors.JWKSMultipleMatchingKeys, errors.JOSENotSupported];

/**
 * Verifies tokens as API Gateway's JWT authorizer does — RS256 signature against the issuer's JWKS
 * (fetched once and cached by jose), issuer, audience (`aud`, else `client_id`), a required expiry — for a function that must
 * answer a missing or bad token itself (the MCP endpoint: its 401 names the resource metadata).
 *
 * A JWKS that cannot be fetched throws `VerifierUnavailableError` (a 503), not a token error (a 401),
 * and is not asked again for `unavailableForMs`.
 */
export function createJwksVerifier(options: JwksVerifierOptions): TokenVerifier {
  const jwksUrl = new URL(options.jwksUrl ?? `${options.issuer.replace(/\/$/, '')}/.well-known/jwks.json`);
  /**
   * Built on the first token, not at init: jose's remote key set makes a fetch `Headers` at once, and the
   * first touch of Node's fetch globals loads undici (~50 ms of cold start here) — which the first MCP
   * request loads anyway (the SDK's transport reads a `Request`).
   */
  let remoteKeys: ReturnType<typeof createRemoteJWKSet> | undefined;
  const now = options.now ?? Date.now;
  const unavailableForMs = options.unavailableForMs ?? 5_000;
  /** Until when the last failed fetch is answered from the negative cache. */
  let unavailableUntil = Number.NEGATIVE_INFINITY;

  function unavailable(cause?: unknown): VerifierUnavailableError {
    const retryAfterSeconds = Math.max(1, Math.ceil((unavailableUntil - now()) / 1000));
    return new VerifierUnavailableError('the issuer signing keys cannot be fetched', retryAfterSeconds, { cause });
  }

  async function signingKey(header: JWSHeaderParameters, token: FlattenedJWSInput): Promise<KeyObject | JoseCryptoKey> {
    if (now() < unavailableUntil) throw unavailable();
    remoteKeys ??= createRemoteJWKSet(
      jwksUrl,
      options.fetchTimeoutMs === undefined ? {} : { timeoutDuration: options.fetchTimeoutMs },
    );
    try {
      return await remoteKeys(header, token);
    } catch (error) {
      if (TOKEN_FAULTS.some((fault) => error instanceof fault)) throw error;
      unavailableUntil = now() + unavailableForMs;
      throw unavailable(error);
    }
  }

  return async function verifyToken(token) {
    const { payload } = await jwtVerify(token, signingKey, {
      issuer: options.issuer,
      algorithms: ['RS256'],
      requiredClaims: ['exp'],
    });
    if (!isIssuedTo(payload, options.audience)) {
      throw new errors.JWTClaimValidationFailed('unexpected "aud" claim value', payload, 'aud', 'check_failed');
    }
    return stringClaims(payload);
  };
}
