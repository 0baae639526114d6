import { createJwksVerifier } from '../lib/auth/jwks-verifier';
import { mcpHandler } from '../lib/mcp/http';
import { domainReadTools, mcpTools } from '../lib/mcp/tools';
import { TOOLS } from '../lib/tools/registry';
import { createToolRuntime } from '../lib/tools/tool-runtime';
import { services } from './shared/process';

const issuer = process.env.JWT_ISSUER ?? '';

/** POST /mcp — every tool over MCP; the function verifies the token against the issuer's JWKS. */
export const handler = mcpHandler({
  tools: mcpTools(TOOLS, services, createToolRuntime(services), domainReadTools(services)),
  verifyToken: createJwksVerifier({ issuer, audience: process.env.JWT_AUDIENCE ?? '', jwksUrl: process.env.JWKS_URL }),
  issuer,
  logger: services.logger,
});
