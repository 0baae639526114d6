import type { Logger } from '@aws-lambda-powertools/logger';
import type { AuthInfo } from '@modelcontextprotocol/sdk/server/auth/types.js';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import {
  type CallToolResult,
  type CreateTaskResult,
  ErrorCode,
  GetTaskPayloadRequestSchema,
  GetTaskRequestSchema,
  ListToolsRequestSchema,
  RELATED_TASK_META_KEY,
} from '@modelcontextprotocol/sdk/types.js';
import { AjvJsonSchemaValidator } from '@modelcontextprotocol/sdk/validation/ajv-provider.js';
import type { jsonSchemaValidator } from '@modelcontextprotocol/sdk/validation/types.js';
import * as z from 'zod/mini';
import { nextAfterRead, nextAfterWrite, type ReadResult } from '../api/next-step';
import {
  type CallTask,
  IDEMPOTENCY_KEY_FIELD,
  type Identity,
  INTERNAL_MESSAGE,
  type InvocationDeadline,
  isTransientAwsError,
  ToolError,
  type ToolResult,
} from '../idempotency';
import { ABANDONED_HINT, STALLED_HINTS } from '../reads/operation';
import { instanceOf, mcpTaskOf, TASK_NOT_FOUND, type TaskWording, taskIdOf, taskNameOf, ttlNote } from './tasks';
import type { Answer, McpTool } from './tools';

/**
 * `tools/call` as retrysafe reads it: the SDK's own request schema strips unknown params, and the
 * proposed MCP request-idempotency extension puts the key in the params (`idempotencyKey`).
 */
const CallToolRequest = z.object({
  method: z.literal('tools/call'),
  params: z.looseObject({
    name: z.string(),
    arguments: z.optional(z.record(z.string(), z.unknown())),
    idempotencyKey: z.optional(z.string()),
    /** MCP tasks: the client asks for a task (`CreateTaskResult`) instead of the tool's result. */
    task: z.optional(z.looseObject({ ttl: z.optional(z.unknown()) })),
  }),
});

/** What the model may be told at once when a task is created (MCP tasks, non-binding). */
const MODEL_IMMEDIATE_RESPONSE = 'io.modelcontextprotocol/model-immediate-response';

/**
 * A JSON-RPC error a request handler throws: the SDK answers `{ code, message }` from it. Not the SDK's
 * `McpError`, whose message already carries the "MCP error <code>: " prefix that the client adds again
 * when it reads the answer.
 */
class JsonRpcError extends Error {
  constructor(
    readonly code: number,
    message: string,
    readonly data?: unknown,
  ) {
    super(message);
    this.name = 'JsonRpcError';
  }
}

const INSTRUCTIONS =
  'Every write tool takes an idempotency_key. Mint one per intent and send the same key on every retry of that intent (after a timeout, a lost answer or an error): the retry returns the first receipt instead of acting twice. Every answer says what to do next in its "next" field (action, after_ms, message): follow it.';

/**
 * An answer as an MCP tool result. `structuredContent` is the HTTP API's answer object with its next step
 * (`next`): clients that show the model only `structuredContent` still tell it what to do. The text says
 * the same — the next step's sentence (after the error, for an error), then the object as JSON.
 */
function toCallToolResult(tool: string, isWrite: boolean, answer: Answer): CallToolResult {
  const next = isWrite ? nextAfterWrite(tool, answer as ToolResult) : nextAfterRead(answer as ReadResult);
  const structured = { ...answer, next };
  const said =
    !answer.ok && 'error' in answer ? `${answer.error.code}: ${answer.error.message}. ${next.message}` : next.message;
  return {
    content: [{ type: 'text', text: `${said}\n${JSON.stringify(structured)}` }],
    structuredContent: structured,
    // For the model, not the transport: a replay or a pending call is not an error.
    isError: !answer.ok && 'error' in answer,
  };
}

/** What the MCP server is built with, once. */
export interface McpServerDependencies {
  readonly tools: readonly McpTool[];
  readonly logger: Logger;
}

/** What one request brings to the server that answers it: its caller and its deadline. */
export interface McpRequestContext {
  readonly caller: Identity;
  readonly deadline: InvocationDeadline;
}

/** The transport's `authInfo` for one request: how its verified caller and its deadline reach the server. */
export function mcpRequestAuth(token: string, context: McpRequestContext): AuthInfo {
  return { token, clientId: context.caller.user, scopes: [], extra: { retrysafe: context } };
}

function requestContextOf(auth: AuthInfo | undefined): McpRequestContext {
  const context = auth?.extra?.retrysafe as McpRequestContext | undefined;
  if (!context) throw new Error('an MCP request reached the server without its caller (see mcpRequestAuth)');
  return context;
}

/**
 * The SDK's Server builds an Ajv with every format in its constructor, only to check elicitation
 * answers — and retrysafe never elicits. The SDK's own validator is built on first use instead.
 */
function lazyAjvValidator(): jsonSchemaValidator {
  let ajv: AjvJsonSchemaValidator | undefined;
  return {
    getValidator(schema) {
      ajv ??= new AjvJsonSchemaValidator();
      return ajv.getValidator(schema);
    },
  };
}

/** A write that can be called as a task. */
type TaskTool = McpTool & Required<Pick<McpTool, 'task' | 'callAsTask'>>;

/** What a task says of itself, for one call of `tool` under `clientKey`. */
function wordingOf(tool: string, clientKey: string): TaskWording {
  return {
    working: {
      live: `Running under idempotency_key "${clientKey}"; it will not run twice. Poll tasks/get, then read tasks/result.`,
      abandoned: ABANDONED_HINT,
    },
    stalled: STALLED_HINTS,
    failed(result) {
      const next = nextAfterWrite(tool, result as unknown as ToolResult);
      return result.error ? `${result.error.code}: ${result.error.message}. ${next.message}` : next.message;
    },
  };
}

/**
 * A task-augmented call that did not become a task (no record of this call under its key: refused before
 * its claim, other arguments under the key, an erased key, a first attempt's business error that freed it):
 * a JSON-RPC error whose message is the answer's error and next step, and whose data is the answer itself
 * — a task under that id could later read otherwise (a resend runs), and a terminal task must not change.
 */
function noTask(tool: string, answer: Answer): JsonRpcError {
  const next = nextAfterWrite(tool, answer as ToolResult);
  const error =
    !answer.ok && 'error' in answer ? answer.error : { code: 'internal' as const, message: INTERNAL_MESSAGE };
  const refused = error.code === 'invalid_args' || error.code === 'conflict' || error.code === 'not_found';
  return new JsonRpcError(
    refused ? ErrorCode.InvalidParams : ErrorCode.InternalError,
    `${error.code}: ${error.message}. ${next.message}`,
    {
      ...answer,
      next,
    },
  );
}

/** A task read that failed (the store): the error the runtime classified, worded as a JSON-RPC error. */
function taskReadError(error: unknown): Error {
  if (error instanceof ToolError) {
    return new JsonRpcError(
      ErrorCode.InternalError,
      `${error.code}: ${error.expose ? error.message : INTERNAL_MESSAGE}`,
    );
  }
  return error as Error;
}

/** The caller's task `taskId` names, read now; the spec's not-found error for anything else. */
async function readTask(
  byName: ReadonlyMap<string, McpTool>,
  taskId: string,
  caller: Identity,
): Promise<{ readonly tool: string; readonly clientKey: string; readonly task: CallTask }> {
  const name = taskNameOf(taskId);
  const tool = name && byName.get(name.tool);
  if (!name || !tool?.task) throw new JsonRpcError(ErrorCode.InvalidParams, TASK_NOT_FOUND);
  const task = await tool.task(name.clientKey, caller).catch((error: unknown) => {
    throw taskReadError(error);
  });
  // Another caller's key hashes to another record; a later call under the key after its TTL is another task.
  if (!task || instanceOf(task.callId) !== name.instance)
    throw new JsonRpcError(ErrorCode.InvalidParams, TASK_NOT_FOUND);
  return { tool: name.tool, clientKey: name.clientKey, task };
}

/** Time kept back from a request's deadline when `tasks/result` waits: enough to answer before it. */
const RESULT_DEADLINE_MARGIN_MS = 1_000;

/**
 * The longest `tasks/result` waits for a working task, in ms: an invocation of the MCP function is one
 * of its 50 (its reserved concurrency), so a poll must not hold one for seconds (at 9 s, ~6 polls/s of one
 * tenant would hold them all). Past it the client is told to poll `tasks/get` (at the task's
 * `pollInterval`) and ask again once the task is terminal — as the SDK's clients do anyway.
 * @default 1_000
 */
export const TASK_RESULT_HOLD_MS = 1_000;

/**
 * An MCP server, built once and reused: it serves one request at a time (connected to that request's
 * transport), each request's caller and deadline coming with it (`mcpRequestAuth`). Stateless: nothing
 * of a request outlives its answer, so any Lambda instance answers any request. `tools/list` lists
 * every write and read; `tools/call` answers with the same answer object as the HTTP API — or, asked for
 * a task (MCP 2025-11-25), with the task its call is (`lib/mcp/tasks.ts`); `tasks/get` and `tasks/result`
 * read it.
 */
export function createMcpServer({ tools, logger }: McpServerDependencies): Server {
  const server = new Server(
    { name: 'retrysafe', version: '0.1.0' },
    {
      // Tasks: a write may be called as one. No tasks/list (no index by caller), no tasks/cancel (no state
      // of a call allows it): the SDK answers both -32601.
      capabilities: { tools: {}, tasks: { requests: { tools: { call: {} } } } },
      instructions: INSTRUCTIONS,
      jsonSchemaValidator: lazyAjvValidator(),
    },
  );
  const byName = new Map(tools.map((tool) => [tool.listing.name, tool]));
  const listing = { tools: tools.map((tool) => tool.listing) };

  /** A call's answer: the tool's, or a failure worded for the model (never a raw message). */
  async function answerCall(
    tool: McpTool,
    name: string,
    input: Record<string, unknown>,
    { caller, deadline }: McpRequestContext,
  ): Promise<Answer> {
    try {
      return await tool.call(input, caller, deadline);
    } catch (error) {
      // A tool's failure is an answer for the model (with its next step), never a JSON-RPC error that
      // would carry the raw message: a store outage is `unavailable`, anything else `internal`, logged.
      logger.error('tool call failed', { tool: name, transport: 'mcp', error: error as Error });
      const failure = isTransientAwsError(error)
        ? { code: 'unavailable' as const, message: 'a store is unavailable; retry later' }
        : { code: 'internal' as const, message: INTERNAL_MESSAGE };
      return { ok: false, error: failure };
    }
  }

  /**
   * A task-augmented call: the same call, and the task it is — built from what its attempt wrote or read
   * (`callAsTask`), never a read of whatever sits under the key afterwards; no call of its own, no task.
   */
  async function taskCreated(
    tool: TaskTool,
    name: string,
    input: Record<string, unknown>,
    { caller, deadline, askedTtl }: McpRequestContext & { readonly askedTtl: unknown },
  ): Promise<CreateTaskResult> {
    let answered: { readonly answer: Answer; readonly task: CallTask | undefined };
    try {
      answered = await tool.callAsTask(input, caller, deadline);
    } catch (error) {
      logger.error('tool call failed', { tool: name, transport: 'mcp', error: error as Error });
      throw noTask(name, { ok: false, error: { code: 'internal', message: INTERNAL_MESSAGE } });
    }
    const { answer, task } = answered;
    const clientKey = input[IDEMPOTENCY_KEY_FIELD];
    if (!task || typeof clientKey !== 'string') throw noTask(name, answer);
    const created = mcpTaskOf(taskIdOf(name, clientKey, task.callId), task, wordingOf(name, clientKey));
    const note = ttlNote(askedTtl, created.ttl);
    const statusMessage = [created.statusMessage, note].filter(Boolean).join(' ');
    return {
      task: statusMessage ? { ...created, statusMessage } : created,
      _meta: { [MODEL_IMMEDIATE_RESPONSE]: nextAfterWrite(name, answer as ToolResult).message },
    };
  }

  server.setRequestHandler(ListToolsRequestSchema, async function listTools() {
    return listing;
  });

  server.setRequestHandler(CallToolRequest, async function callTool(request, extra): Promise<
    CallToolResult | CreateTaskResult
  > {
    const context = requestContextOf(extra.authInfo);
    const { name, arguments: args = {}, idempotencyKey, task } = request.params;
    const tool = byName.get(name);
    if (!tool) throw new JsonRpcError(ErrorCode.InvalidParams, `Unknown tool: ${name}`);
    if (task !== undefined && !(tool.task && tool.callAsTask)) {
      throw new JsonRpcError(ErrorCode.MethodNotFound, `Tool ${name} does not support task-augmented execution`);
    }
    const isWrite = !tool.listing.annotations.readOnlyHint;
    let input: Record<string, unknown> = args;
    let answer: Answer | undefined;
    if (isWrite && idempotencyKey !== undefined) {
      const inArguments = args[IDEMPOTENCY_KEY_FIELD];
      if (inArguments !== undefined && inArguments !== idempotencyKey) {
        answer = {
          ok: false,
          error: {
            code: 'invalid_args',
            message: `${IDEMPOTENCY_KEY_FIELD}: the arguments and the request's idempotencyKey differ`,
          },
        };
      }
      input = { ...args, [IDEMPOTENCY_KEY_FIELD]: idempotencyKey };
    }
    if (task !== undefined) {
      // Refused before the call: no call, no task.
      if (answer) throw noTask(name, answer);
      return taskCreated(tool as TaskTool, name, input, { ...context, askedTtl: task.ttl });
    }
    // A write's log line (with its metrics) is the runtime's.
    return toCallToolResult(name, isWrite, answer ?? (await answerCall(tool, name, input, context)));
  });

  server.setRequestHandler(GetTaskRequestSchema, async function getTask(request, extra) {
    const { caller } = requestContextOf(extra.authInfo);
    const { tool, clientKey, task } = await readTask(byName, request.params.taskId, caller);
    return mcpTaskOf(request.params.taskId, task, wordingOf(tool, clientKey));
  });

  // tasks/result waits for a working task (reads only) until it is terminal, for TASK_RESULT_HOLD_MS at most
  // (and never past this request's time): then it says so (the client polls tasks/get and asks again).
  server.setRequestHandler(GetTaskPayloadRequestSchema, async function getTaskResult(request, extra) {
    const { caller, deadline } = requestContextOf(extra.authInfo);
    const taskId = request.params.taskId;
    // What is left of the hold: of TASK_RESULT_HOLD_MS, and of the invocation's time.
    const holdUntil = deadline.getRemainingTimeInMillis() - TASK_RESULT_HOLD_MS;
    for (;;) {
      const { tool, task } = await readTask(byName, taskId, caller);
      if (task.status !== 'working') {
        return { ...toCallToolResult(tool, true, task.result), _meta: { [RELATED_TASK_META_KEY]: { taskId } } };
      }
      const remaining = deadline.getRemainingTimeInMillis();
      const wait = Math.min(task.pollIntervalMs, TASK_RESULT_HOLD_MS, remaining - holdUntil);
      if (extra.signal.aborted || wait <= 0 || remaining < wait + RESULT_DEADLINE_MARGIN_MS) {
        throw new JsonRpcError(
          ErrorCode.InternalError,
          `the task is still working (tasks/result waits at most ${TASK_RESULT_HOLD_MS} ms): poll tasks/get every pollInterval, then ask tasks/result again once it is terminal`,
          { taskId, status: 'working', pollInterval: task.pollIntervalMs },
        );
      }
      await new Promise((resolve) => setTimeout(resolve, wait));
    }
  });
  return server;
}
