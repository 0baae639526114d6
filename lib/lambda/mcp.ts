import { createJwksVerifier } from '../auth/jwks-verifier';
import type { LambdaHandler } from '../http/boundary';
import { mcpHandler } from '../mcp/http';
import { mcpTools } from '../mcp/tools';
import { type ComposeServices, processServices, type ReadsOver, type ToolsOver } from './core-services';
import { createToolRuntime } from './runtime';

/** What an MCP entry serves besides the tools and `get_operation`. */
export interface McpEntryOptions<Svc> {
  /**
   * The app's own reads (`defineReadModule`), each a read-only MCP tool, bound to the services
   * `compose` builds: the one list its config, its OpenAPI entry and its construct take too (`[]` for an
   * app without reads — required, so that no entry serves fewer reads than the others without a word).
   */
  readonly reads: ReadsOver<NoInfer<Svc>>;
}

/**
 * `POST /mcp` (and its metadata routes): every tool and read over MCP. Behind API Gateway's JWT authorizer,
 * the function verifies the token again against the issuer's JWKS (`JWT_ISSUER`, `JWT_AUDIENCE`, `JWKS_URL`).
 */
export function mcpEntry<Svc>(
  tools: ToolsOver<NoInfer<Svc>>,
  compose: ComposeServices<Svc>,
  options: McpEntryOptions<Svc>,
  env: NodeJS.ProcessEnv = process.env,
): LambdaHandler {
  const core = processServices(env);
  const services = compose(core);
  const issuer = env.JWT_ISSUER ?? '';
  return mcpHandler({
    tools: mcpTools(tools, services, createToolRuntime(core, env), options.reads),
    verifyToken: createJwksVerifier({ issuer, audience: env.JWT_AUDIENCE ?? '', jwksUrl: env.JWKS_URL }),
    issuer,
    logger: core.logger,
  });
}
