import type { Context, SQSBatchResponse } from 'aws-lambda';
import type * as z from 'zod/mini';
import { completerTrigger, createCompleter, recheckBatch, recheckFigures, streamFigures } from '../admin/completer';
import { parseEraseRequest } from '../admin/erase-request';
import { type EraseScope, type ErasureReport, eraseTenant, RECORDS_ONLY_ERASE_SCOPE } from '../admin/erase-tenant';
import { createSqsRecheckQueue } from '../admin/recheck-queue';
import { createJwksVerifier } from '../auth/jwks-verifier';
import type { LambdaHandler } from '../http/boundary';
import { listToolsHandler } from '../http/list-tools';
import { openApiHandler } from '../http/openapi';
import { getOperationHandler } from '../http/reads';
import { healthHandler, notFoundHandler } from '../http/store-free';
import { toolHandler } from '../http/write';
import type { JsonObject } from '../idempotency';
import { mcpHandler } from '../mcp/http';
import { type McpTool, mcpTools } from '../mcp/tools';
import { createCompleterMetrics } from '../observability/metrics';
import { withInvocationDeadline } from '../store/deadline';
import type { AnyToolModule, ToolHandler, ToolModule } from '../tools/tool-module';
import { createToolRuntime } from '../tools/tool-runtime';
import { type ComposeServices, type CoreServices, createCoreServices, createTracer } from './core-services';

/**
 * The Lambda handlers of an app's entry points, each composed from the process's environment when the
 * entry file loads: an entry file is one line (`export const handler = toolEntry(upsertContact, services)`).
 * The construct (`retrysafe/cdk`) sets the environment these read.
 */

// biome-ignore lint/suspicious/noExplicitAny: tools of every schema and receipt, bound to the same services
type ToolsOver<Svc> = readonly ToolModule<string, any, any, Svc>[];

/** The process's core services, traced where the deployment traces. */
function processServices(env: NodeJS.ProcessEnv): CoreServices {
  const core = createCoreServices(env);
  createTracer(env)?.captureAWSv3Client(core.client);
  return core;
}

/** `POST /tools/<name>`: one tool, bound to the services `compose` builds, behind the idempotency runtime. */
export function toolEntry<N extends string, S extends z.ZodMiniObject, R extends JsonObject, Svc>(
  module: ToolModule<N, S, R, Svc>,
  compose: ComposeServices<Svc>,
  env: NodeJS.ProcessEnv = process.env,
): ToolHandler<N> {
  const core = processServices(env);
  return toolHandler(module, { services: compose(core), runtime: createToolRuntime(core, env), logger: core.logger });
}

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
  tools: ToolsOver<Svc>,
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

/**
 * The completer: finishes the calls of `tools` whose worker died. Two triggers, one function — the
 * idempotency table's stream (calls still in flight at the end of a batch get a delayed recheck; an
 * error fails the batch, which the mapping retries and bisects) and the recheck queue (each recheck
 * finishes its call if it was abandoned; the messages that failed are returned, and only those come back).
 */
export function completerEntry<Svc>(
  tools: ToolsOver<Svc>,
  compose: ComposeServices<Svc>,
  env: NodeJS.ProcessEnv = process.env,
): (event: unknown, context: Context) => Promise<SQSBatchResponse | undefined> {
  const core = createCoreServices(env);
  const tracer = createTracer(env);
  tracer?.captureAWSv3Client(core.client);
  const queue = createSqsRecheckQueue(env);
  tracer?.captureAWSv3Client(queue.sqs);
  const recordCompleter = createCompleterMetrics(env.POWERTOOLS_SERVICE_NAME || 'retrysafe');
  const completer = createCompleter(
    {
      services: { ...compose(core), client: core.client, logger: core.logger },
      runtime: createToolRuntime(core, env),
      tools,
      queue,
    },
    env,
  );
  return async function complete(event, context) {
    const trigger = completerTrigger(event);
    // Every DynamoDB call is bounded by the invocation's deadline, as in the API's handlers.
    return withInvocationDeadline(context, async function completeBatch() {
      if (trigger.source === 'rechecks') {
        const report = await recheckBatch(completer, trigger.records, context, core.logger);
        core.logger.info('completer rechecks', { ...report.outcomes, failed: report.failedMessageIds.length });
        recordCompleter(recheckFigures(report));
        return { batchItemFailures: report.failedMessageIds.map((itemIdentifier) => ({ itemIdentifier })) };
      }
      const report = await completer.onStream(trigger.records);
      core.logger.info('completer stream batch', { ...report });
      recordCompleter(streamFigures(report));
      return undefined;
    });
  };
}

/** `GET /tools`: every tool with its JSON Schemas and annotations. No services: no table is touched. */
export function listToolsEntry(tools: readonly AnyToolModule[], env: NodeJS.ProcessEnv = process.env): LambdaHandler {
  return listToolsHandler(tools, createCoreServices(env).logger);
}

/** `GET /openapi.json`: the OpenAPI 3.1 document of `tools`. No token, no table. */
export function openApiEntry(tools: readonly AnyToolModule[]): LambdaHandler {
  return openApiHandler(tools);
}

/**
 * `GET /tools/{tool}/operations/{key}`: the caller's own record of a client key. The tools' names come
 * from the environment (`TOOL_NAMES`, set by the construct), so this entry carries no tool.
 */
export function getOperationEntry(env: NodeJS.ProcessEnv = process.env): LambdaHandler {
  const core = processServices(env);
  const toolNames = (env.TOOL_NAMES ?? '').split(',').filter(Boolean);
  return getOperationHandler({ runtime: createToolRuntime(core, env), toolNames }, core.logger);
}

/** `GET /health`: no authorization, no store. */
export function healthEntry(): LambdaHandler {
  return healthHandler();
}

/** `$default`: any request no route matches (an unknown tool included), a JSON 404. */
export function notFoundEntry(): LambdaHandler {
  return notFoundHandler();
}

/**
 * Tenant erase, for operators: invoked directly (`{"tenant":"acme","dryRun":true}`), never routed. It
 * erases the tenant's idempotency records; `includeDomain` also erases the domain tables `scope` names.
 */
export function eraseEntry(
  scope: EraseScope = RECORDS_ONLY_ERASE_SCOPE,
  env: NodeJS.ProcessEnv = process.env,
): (event: unknown, context: Context) => Promise<ErasureReport> {
  const core = processServices(env);
  return async function erase(event, context) {
    const request = parseEraseRequest(event);
    // Bounded by the invocation's deadline; a run cut short is resumed by running it again.
    const report = await withInvocationDeadline(context, () => eraseTenant(core.client, request, env, scope));
    core.logger.info('tenant erase', { ...report });
    return report;
  };
}
