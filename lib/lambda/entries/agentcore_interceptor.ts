import { callerKeyFromEnv } from '../../agentcore/caller-key';
import { agentCoreInterceptor } from '../../agentcore/interceptor';
import { createJwksVerifier } from '../../auth/jwks-verifier';

/**
 * The AgentCore Gateway's REQUEST interceptor: verifies the bearer token against the issuer's JWKS
 * (`JWT_ISSUER`, `JWT_AUDIENCE`, `JWKS_URL`, as the MCP function does) and writes its caller into a
 * `tools/call`'s arguments, signed with the key `RETRYSAFE_CALLER_KEY_SECRET` names.
 */
export const handler = agentCoreInterceptor({
  verifyToken: createJwksVerifier({
    issuer: process.env.JWT_ISSUER ?? '',
    audience: process.env.JWT_AUDIENCE ?? '',
    jwksUrl: process.env.JWKS_URL,
  }),
  callerKey: callerKeyFromEnv(),
});
