import { createJwksVerifier } from '../auth/jwks-verifier';
import type { LambdaHandler } from '../http/boundary';
import { mcpHandler } from '../mcp/http';
import { type McpTool, mcpTools } from '../mcp/tools';
import { createToolRuntime } from '../tools/tool-runtime';
import { type ComposeServices, type CoreServices, processServices, type ToolsOver } from './core-services';

/** What an MCP entry serves besides the tools and `get_operation`. */
export interface McpEntryOptions<Svc> {
  /**
   * The app's own reads, as MCP tools (from the services `compose` built).
   * @default none
   */
  readonly reads?: (services: Svc, core: CoreServices) => readonly McpTool[];
}

/**
 * `POST /mcp` (and its metadata routes): every tool and read over MCP. The function verifies the token
 * itself against the issuer's JWKS (`JWT_ISSUER`, `JWT_AUDIENCE`, `JWKS_URL`).
 */
export function mcpEntry<Svc>(
  tools: ToolsOver<NoInfer<Svc>>,
  compose: ComposeServices<Svc>,
  options: McpEntryOptions<Svc> = {},
  env: NodeJS.ProcessEnv = process.env,
): LambdaHandler {
  const core = processServices(env);
  const services = compose(core);
  const issuer = env.JWT_ISSUER ?? '';
  return mcpHandler({
    tools: mcpTools(tools, services, createToolRuntime(core, env), options.reads?.(services, core) ?? []),
    verifyToken: createJwksVerifier({ issuer, audience: env.JWT_AUDIENCE ?? '', jwksUrl: env.JWKS_URL }),
    issuer,
    logger: core.logger,
  });
}
