import { linkSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { errors, exportJWK, generateKeyPair, importJWK, type JWK, type JWTPayload, jwtVerify, SignJWT } from 'jose';
import { isIssuedTo, stringClaims, tenantClaimName } from '../auth/token-claims';

/** Issuer, audience and tenant claim, as the deployed JWT authorizer is configured. */
export interface JwtSettings {
  readonly issuer: string;
  readonly audience: string;
  readonly tenantClaim: string;
}

/**
 * The local server's own URL, `http://127.0.0.1:${PORT}` (`PORT` as `npm start` reads it, default 3000):
 * the dev issuer, since the protected-resource metadata names the issuer as an authorization server, and
 * clients (mcp-remote, the SDK's OAuth discovery) parse authorization servers as URLs (RFC 9728, RFC 8414).
 */
export function localIssuer(env: NodeJS.ProcessEnv = process.env): string {
  return `http://127.0.0.1:${env.PORT || 3000}`;
}

function isHttpUrl(text: string): boolean {
  try {
    return /^https?:$/.test(new URL(text).protocol);
  } catch {
    return false;
  }
}

/**
 * From the environment: `JWT_ISSUER` (an http(s) URL; default `localIssuer(env)`), `JWT_AUDIENCE`,
 * `TENANT_CLAIM`.
 */
export function jwtSettings(env: NodeJS.ProcessEnv = process.env): JwtSettings {
  const issuer = env.JWT_ISSUER || localIssuer(env);
  if (!isHttpUrl(issuer)) {
    throw new Error(`JWT_ISSUER: "${issuer}" is not an http(s) URL; an OAuth issuer is named by its URL`);
  }
  return { issuer, audience: env.JWT_AUDIENCE || 'retrysafe', tenantClaim: tenantClaimName(env) };
}

/** API Gateway's JWT authorizer verifies RSA signatures only: the local key is RSA too. */
const ALGORITHM = 'RS256';

/**
 * The local signing key: an RS256 key pair kept as a private JWK in a git-ignored folder (`.local/`
 * unless `DEV_KEY_DIR` says otherwise), created on first use. Dev only: deployed APIs trust their
 * OIDC provider's JWKS instead.
 */
export class DevSigningKey {
  private constructor(
    private readonly privateJwk: JWK,
    readonly settings: JwtSettings,
  ) {}

  static async loadOrCreate(env: NodeJS.ProcessEnv = process.env): Promise<DevSigningKey> {
    const dir = env.DEV_KEY_DIR || '.local';
    const file = join(dir, 'dev-jwt-rs256.json');
    const read = (): JWK | undefined => {
      try {
        return JSON.parse(readFileSync(file, 'utf8')) as JWK;
      } catch {
        return undefined;
      }
    };
    let jwk = read();
    if (!jwk) {
      const { privateKey } = await generateKeyPair(ALGORITHM, { extractable: true });
      const created = await exportJWK(privateKey);
      mkdirSync(dir, { recursive: true, mode: 0o700 });
      try {
        // Written whole to a temporary name, then moved: a reader never sees half a key.
        writeFileSync(`${file}.${process.pid}`, JSON.stringify(created), { mode: 0o600 });
        linkSync(`${file}.${process.pid}`, file); // fails if another process created the key first
        jwk = created;
      } catch {
        jwk = read(); // the other process's key
      } finally {
        rmSync(`${file}.${process.pid}`, { force: true });
      }
      if (!jwk) throw new Error(`cannot create the dev signing key in ${dir}`);
    }
    return new DevSigningKey(jwk, jwtSettings(env));
  }

  /** A token the local server accepts, for `tenant` and `user`, valid for `ttl` (jose's `'1h'`, `'30m'`). */
  mint(tenant: string, user: string, ttl = '1h'): Promise<string> {
    return this.sign({ [this.settings.tenantClaim]: tenant, sub: user }, ttl);
  }

  /**
   * A token with these token claims plus iss, aud, iat and (unless `ttl` is null) exp — tests build broken
   * tokens with it. An `aud` among the claims is kept instead (`aud: undefined`: none, a Cognito access
   * token's shape).
   */
  async sign(tokenClaims: JWTPayload, ttl: string | null = '1h'): Promise<string> {
    const key = await importJWK(this.privateJwk, ALGORITHM);
    const signed = new SignJWT(tokenClaims).setProtectedHeader({ alg: ALGORITHM }).setIssuer(this.settings.issuer);
    const jwt = ('aud' in tokenClaims ? signed : signed.setAudience(this.settings.audience)).setIssuedAt();
    return (ttl === null ? jwt : jwt.setExpirationTime(ttl)).sign(key);
  }

  /** The public half of the key, as a JWKS lists it. */
  publicJwk(): JWK {
    const { d: _d, p: _p, q: _q, dp: _dp, dq: _dq, qi: _qi, ...publicJwk } = this.privateJwk;
    return { ...publicJwk, alg: ALGORITHM, use: 'sig' };
  }

  /**
   * Verifies a token as API Gateway's JWT authorizer does — signature, issuer, audience (`isIssuedTo`: its
   * `aud`, or a Cognito access token's `client_id`, the rule the deployed checks share), expiry — and
   * returns its token claims as the authorizer passes them on (every value a string; a tenant or `sub`
   * that is not one is refused).
   */
  async verify(token: string): Promise<Record<string, string>> {
    const { payload } = await jwtVerify(token, await importJWK(this.publicJwk(), ALGORITHM), {
      issuer: this.settings.issuer,
      algorithms: [ALGORITHM],
      // API Gateway refuses a token without an expiry.
      requiredClaims: ['exp'],
    });
    if (!isIssuedTo(payload, this.settings.audience)) {
      throw new errors.JWTClaimValidationFailed('unexpected "aud" claim value', payload, 'aud', 'check_failed');
    }
    return stringClaims(payload, { TENANT_CLAIM: this.settings.tenantClaim });
  }
}
