import { createRemoteJWKSet, jwtVerify } from 'jose';
import { stringClaims, type TokenVerifier } from './token-claims';

export interface JwksVerifierOptions {
  /** The OIDC issuer tokens must name (`iss`). */
  readonly issuer: string;
  /** The audience tokens must carry (`aud`). */
  readonly audience: string;
  /**
   * Where the issuer publishes its signing keys.
   * @default `${issuer}/.well-known/jwks.json` (Amazon Cognito's location)
   */
  readonly jwksUrl?: string;
}

/**
 * Verifies tokens as API Gateway's JWT authorizer does — RS256 signature against the issuer's JWKS
 * (fetched once and cached by jose), issuer, audience, a required expiry — for a function that must
 * answer a missing or bad token itself (the MCP endpoint: its 401 names the resource metadata).
 */
export function createJwksVerifier(options: JwksVerifierOptions): TokenVerifier {
  const keys = createRemoteJWKSet(
    new URL(options.jwksUrl ?? `${options.issuer.replace(/\/$/, '')}/.well-known/jwks.json`),
  );
  return async function verifyToken(token) {
    const { payload } = await jwtVerify(token, keys, {
      issuer: options.issuer,
      audience: options.audience,
      algorithms: ['RS256'],
      requiredClaims: ['exp'],
    });
    return stringClaims(payload);
  };
}
