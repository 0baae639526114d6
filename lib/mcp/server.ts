import type { Logger } from '@aws-lambda-powertools/logger';
import {
  type AuthInfo,
  type CallToolResult,
  CLIENT_CAPABILITIES_META_KEY,
  type CreateTaskResult,
  type JSONRPCRequest,
  MissingRequiredClientCapabilityError,
  ProtocolError,
  ProtocolErrorCode,
  RELATED_TASK_META_KEY,
  type Result,
  Server,
  type ServerContext,
} from '@modelcontextprotocol/server';
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
import {
  ABANDONED_HINT,
  EXPIRING_NOW_HINT,
  GIVES_UP_HINTS,
  NEVER_RAN_STALLED_HINTS,
  POWERTOOLS_LIVE_HINT,
  QUEUED_HINT,
  STALLED_HINTS,
} from '../reads/operation';
import {
  commitProofFor,
  extensionTaskOf,
  instanceOf,
  mcpTaskOf,
  TASK_NOT_FOUND,
  TASKS_EXTENSION,
  type TaskWording,
  taskIdOf,
  taskNameOf,
  ttlNote,
} from './tasks';
import type { Answer, McpTool } from './tools';

/**
 * `tools/call`'s params as retrysafe reads them: the SDK's own schema strips unknown params, and the
 * proposed MCP request-idempotency extension puts the key in the params (`idempotencyKey`).
 */
const CallToolParams = z.looseObject({
  name: z.string(),
  arguments: z.optional(z.record(z.string(), z.unknown())),
  idempotencyKey: z.optional(z.string()),
  /** MCP tasks (2025-11-25): the client asks for a task (`CreateTaskResult`) instead of the tool's result. */
  task: z.optional(z.looseObject({ ttl: z.optional(z.unknown()) })),
});
type CallToolParamsOf = z.infer<typeof CallToolParams>;

/** A `tasks/*` request's params: the task it names. */
const TaskParams = z.looseObject({ taskId: z.string() });

/** What the model may be told at once when a task is created (MCP tasks, non-binding). */
const MODEL_IMMEDIATE_RESPONSE = 'io.modelcontextprotocol/model-immediate-response';

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

function requestContextOf(ctx: ServerContext): McpRequestContext {
  const context = ctx.http?.authInfo?.extra?.retrysafe as McpRequestContext | undefined;
  if (!context) throw new Error('an MCP request reached the server without its caller (see mcpRequestAuth)');
  return context;
}

/** A write that can be called as a task. */
type TaskTool = McpTool & Required<Pick<McpTool, 'task' | 'callAsTask'>>;

/** What a task says of itself, for one call of `tool` under `clientKey`, in `era`'s words. */
function wordingOf(tool: string, clientKey: string, era: McpEra = 'legacy'): TaskWording {
  const then = era === 'legacy' ? 'Poll tasks/get, then read tasks/result.' : 'Poll tasks/get until it is completed.';
  return {
    working: {
      live: `Running under idempotency_key "${clientKey}"; it will not run twice. ${then}`,
      abandoned: ABANDONED_HINT,
      powertools: POWERTOOLS_LIVE_HINT,
      queued: QUEUED_HINT,
    },
    givesUp: GIVES_UP_HINTS,
    stalled: STALLED_HINTS,
    stalledNeverRan: NEVER_RAN_STALLED_HINTS,
    expiringNow: EXPIRING_NOW_HINT,
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
function noTask(tool: string, answer: Answer): ProtocolError {
  const next = nextAfterWrite(tool, answer as ToolResult);
  const error =
    !answer.ok && 'error' in answer ? answer.error : { code: 'internal' as const, message: INTERNAL_MESSAGE };
  const refused = error.code === 'invalid_args' || error.code === 'conflict' || error.code === 'not_found';
  return new ProtocolError(
    refused ? ProtocolErrorCode.InvalidParams : ProtocolErrorCode.InternalError,
    `${error.code}: ${error.message}. ${next.message}`,
    { ...answer, next },
  );
}

/** A task read that failed (the store): the error the runtime classified, worded as a JSON-RPC error. */
function taskReadError(error: unknown): Error {
  if (error instanceof ToolError) {
    return new ProtocolError(
      ProtocolErrorCode.InternalError,
      `${error.code}: ${error.expose ? error.message : INTERNAL_MESSAGE}`,
    );
  }
  return error as Error;
}

/**
 * The caller's task `taskId` names, read now; the spec's not-found error for anything else. A commit mark
 * (2025-11-25's only: the extension never issues one) names the task only where it proves the claim that
 * stored the call's outcome (`commitProofOf`); a forged mark is an unknown id.
 */
async function readTask(
  byName: ReadonlyMap<string, McpTool>,
  taskId: string,
  caller: Identity,
  era: McpEra,
): Promise<{ readonly tool: string; readonly clientKey: string; readonly task: CallTask }> {
  const name = taskNameOf(taskId);
  const tool = name && byName.get(name.tool);
  const notFound = () => new ProtocolError(ProtocolErrorCode.InvalidParams, TASK_NOT_FOUND);
  if (!name || !tool?.task || (era === 'modern' && name.commitProof !== undefined)) throw notFound();
  const task = await tool.task(name.clientKey, caller).catch((error: unknown) => {
    throw taskReadError(error);
  });
  // Another caller's key hashes to another record; a later call under the key after its TTL is another task.
  if (!task || instanceOf(task.callId) !== name.instance) throw notFound();
  if (name.commitProof === undefined) return { tool: name.tool, clientKey: name.clientKey, task };
  // Rule 5: a task's answer is a replay, but for the task of the request that committed the call (its id
  // says so, with the proof): that request's answer, which it handed over as this task, says false.
  // A committed call is settled: a mark on a working task, or of another claim, names no task.
  if (task.status === 'working' || commitProofFor(task.claimId, task.callId) !== name.commitProof) {
    throw notFound();
  }
  return {
    tool: name.tool,
    clientKey: name.clientKey,
    task: { ...task, result: { ...task.result, idempotent: false } },
  };
}

/** Whether this request's client declared the tasks extension (2026-07-28: in each request's `_meta`). */
function declaresTasks(ctx: ServerContext): boolean {
  // The SDK types the envelope as `{}` (its keys are the spec's, read as the request carries them).
  const envelope = ctx.mcpReq.envelope as Readonly<Record<string, unknown>> | undefined;
  const declared = envelope?.[CLIENT_CAPABILITIES_META_KEY] as
    | { readonly extensions?: Readonly<Record<string, unknown>> }
    | undefined;
  const extension = declared?.extensions?.[TASKS_EXTENSION];
  return typeof extension === 'object' && extension !== null;
}

/** The extension's `-32021` for a `tasks/*` request whose client did not declare it: nothing is read. */
function requireTasksExtension(ctx: ServerContext): void {
  if (declaresTasks(ctx)) return;
  throw new MissingRequiredClientCapabilityError(
    { requiredCapabilities: { extensions: { [TASKS_EXTENSION]: {} } } },
    `Missing required client capability: the ${TASKS_EXTENSION} extension (declare it in params._meta["${CLIENT_CAPABILITIES_META_KEY}"].extensions)`,
  );
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

/** A `tools/call` read and checked, before it runs: the tool, its input, or the answer that refuses it. */
interface PreparedCall {
  readonly tool: McpTool;
  readonly name: string;
  readonly isWrite: boolean;
  readonly input: Record<string, unknown>;
  /** Set when the call is refused before it runs (the key in the arguments and in the params differ). */
  readonly refusal?: Answer;
}

/** Reads a `tools/call`'s params: the tool (an unknown one is -32602), its input with the request's key. */
function prepareCall(
  byName: ReadonlyMap<string, McpTool>,
  { name, arguments: args = {}, idempotencyKey }: CallToolParamsOf,
): PreparedCall {
  const tool = byName.get(name);
  if (!tool) throw new ProtocolError(ProtocolErrorCode.InvalidParams, `Unknown tool: ${name}`);
  const isWrite = !tool.listing.annotations.readOnlyHint;
  if (!isWrite || idempotencyKey === undefined) return { tool, name, isWrite, input: args };
  const input = { ...args, [IDEMPOTENCY_KEY_FIELD]: idempotencyKey };
  const inArguments = args[IDEMPOTENCY_KEY_FIELD];
  if (inArguments === undefined || inArguments === idempotencyKey) return { tool, name, isWrite, input };
  const refusal: Answer = {
    ok: false,
    error: {
      code: 'invalid_args',
      message: `${IDEMPOTENCY_KEY_FIELD}: the arguments and the request's idempotencyKey differ`,
    },
  };
  return { tool, name, isWrite, input, refusal };
}

/**
 * A task answered to `tools/call`, on its way past the SDK's check of `tools/call` results (a
 * `CallToolResult`, in both eras): SDK v2 has no runtime for tasks (neither 2025-11-25's nor the tasks
 * extension's), so it would refuse a `CreateTaskResult` there. Thrown inside that check, caught outside it.
 */
class TaskAnswered extends Error {
  constructor(readonly result: Result) {
    super('a task answered tools/call');
    this.name = 'TaskAnswered';
  }
}

/**
 * The SDK v2 server, with one hook (`_wrapHandler`, the SDK's seam for role-specific result checks): a
 * `tools/call` answered with a task skips the `CallToolResult` check; every other answer is checked.
 */
class RetrysafeServer extends Server {
  protected override _wrapHandler(
    method: string,
    handler: (request: JSONRPCRequest, ctx: ServerContext) => Promise<Result>,
  ): (request: JSONRPCRequest, ctx: ServerContext) => Promise<Result> {
    if (method !== 'tools/call') return super._wrapHandler(method, handler);
    const checked = super._wrapHandler(method, async function callOrTask(request, ctx) {
      const result = await handler(request, ctx);
      if ('task' in result || result.resultType === 'task') throw new TaskAnswered(result);
      return result;
    });
    return async function toolsCall(request, ctx) {
      try {
        return await checked(request, ctx);
      } catch (error) {
        if (error instanceof TaskAnswered) return error.result;
        throw error;
      }
    };
  }
}

/** Which protocol era a server answers: 2025-11-25 and earlier (`initialize`), or 2026-07-28. */
export type McpEra = 'legacy' | 'modern';

/**
 * An MCP server for one era, on the official SDK v2 server. Stateless: nothing of a request outlives its
 * answer, so any Lambda instance answers any request; each request's caller and deadline come with it
 * (`mcpRequestAuth`). Both eras list every write and read, and answer a `tools/call` with the same answer
 * object as the HTTP API. 2025-11-25 adds its experimental tasks: a write called with `task` answers the
 * task its call is (`lib/mcp/tasks.ts`), which `tasks/get` and `tasks/result` read.
 */
export function createMcpServer({ tools, logger }: McpServerDependencies, era: McpEra): Server {
  const server = new RetrysafeServer(
    { name: 'retrysafe', version: '0.1.0' },
    {
      // 2025-11-25 tasks: a write may be called as one. No tasks/list (no index by caller), no tasks/cancel
      // (no state of a call allows it): the SDK answers both -32601. 2026-07-28 removed them from the core.
      // 2026-07-28: the tasks extension (io.modelcontextprotocol/tasks), declared as it says.
      capabilities:
        era === 'legacy'
          ? { tools: {}, tasks: { requests: { tools: { call: {} } } } }
          : { tools: {}, extensions: { [TASKS_EXTENSION]: {} } },
      instructions: INSTRUCTIONS,
    },
  );
  const byName = new Map(tools.map((tool) => [tool.listing.name, tool]));

  /** A call's answer: the tool's, or a failure worded for the model (never a raw message). */
  async function answerCall({ tool, name, input }: PreparedCall, { caller, deadline }: McpRequestContext) {
    try {
      return await tool.call(input, caller, deadline);
    } catch (error) {
      // A tool's failure is an answer for the model (with its next step), never a JSON-RPC error that
      // would carry the raw message: a store outage is `unavailable`, anything else `internal`, logged.
      logger.error('tool call failed', { tool: name, transport: 'mcp', error: error as Error });
      const failure = isTransientAwsError(error)
        ? { code: 'unavailable' as const, message: 'a store is unavailable; retry later' }
        : { code: 'internal' as const, message: INTERNAL_MESSAGE };
      return { ok: false, error: failure } as Answer;
    }
  }

  /**
   * A task-augmented call (2025-11-25): the same call, and the task it is — built from what its attempt
   * wrote or read (`callAsTask`), never a read of whatever sits under the key afterwards; no call of its
   * own, no task.
   */
  async function taskCreated(
    { tool, name, input }: PreparedCall,
    { caller, deadline }: McpRequestContext,
    askedTtl: unknown,
  ): Promise<CreateTaskResult> {
    let answered: { readonly answer: Answer; readonly task: CallTask | undefined };
    try {
      answered = await (tool as TaskTool).callAsTask(input, caller, deadline);
    } catch (error) {
      logger.error('tool call failed', { tool: name, transport: 'mcp', error: error as Error });
      throw noTask(name, { ok: false, error: { code: 'internal', message: INTERNAL_MESSAGE } });
    }
    const { answer, task } = answered;
    const clientKey = input[IDEMPOTENCY_KEY_FIELD];
    if (!task || typeof clientKey !== 'string') throw noTask(name, answer);
    // Its answer said `idempotent: false`: this request committed the call, and its task's result is that answer.
    const committed = 'idempotent' in answer && answer.idempotent === false;
    const proof = committed ? commitProofFor(task.claimId, task.callId) : undefined;
    const created = mcpTaskOf(taskIdOf(name, clientKey, task.callId, proof), task, wordingOf(name, clientKey));
    const note = ttlNote(askedTtl, created.ttl);
    const statusMessage = [created.statusMessage, note].filter(Boolean).join(' ');
    return {
      task: statusMessage ? { ...created, statusMessage } : created,
      _meta: { [MODEL_IMMEDIATE_RESPONSE]: nextAfterWrite(name, answer as ToolResult).message },
    } as CreateTaskResult;
  }

  server.setRequestHandler('tools/list', function listTools() {
    // `execution.taskSupport` left the core with 2026-07-28 (the SDK refuses it there).
    const listed = tools.map(({ listing }) => {
      if (era === 'legacy') return listing;
      const { execution: _execution, ...rest } = listing;
      return rest;
    });
    return { tools: listed } as never;
  });

  // The 3-argument form: the SDK's own params schema would strip `idempotencyKey` and `task`.
  server.setRequestHandler('tools/call', { params: CallToolParams }, async function callTool(params, ctx) {
    const context = requestContextOf(ctx);
    const prepared = prepareCall(byName, params);
    if (era === 'legacy' && params.task !== undefined) {
      if (!(prepared.tool.task && prepared.tool.callAsTask)) {
        throw new ProtocolError(
          ProtocolErrorCode.MethodNotFound,
          `Tool ${prepared.name} does not support task-augmented execution`,
        );
      }
      // Refused before the call: no call, no task.
      if (prepared.refusal) throw noTask(prepared.name, prepared.refusal);
      return taskCreated(prepared, context, params.task.ttl);
    }
    if (era === 'modern' && !prepared.refusal && prepared.tool.callAsTask && declaresTasks(ctx)) {
      return callOrTask(prepared, context);
    }
    // A write's log line (with its metrics) is the runtime's.
    const answer = prepared.refusal ?? (await answerCall(prepared, context));
    return toCallToolResult(prepared.name, prepared.isWrite, answer);
  });

  /**
   * A write's `tools/call` from a client that declared the tasks extension (2026-07-28): the same call;
   * a call still in flight when this request must answer — the `pending` a client would otherwise poll —
   * comes back as the task it is (`resultType: "task"`), every other answer as the `CallToolResult` it is.
   * The task is the call's record, written (the claim) before the call ran: a `tasks/get` for it resolves
   * on any instance at once, as the extension requires of a task returned.
   */
  async function callOrTask({ tool, name, input }: PreparedCall, { caller, deadline }: McpRequestContext) {
    let answered: { readonly answer: Answer; readonly task: CallTask | undefined };
    try {
      answered = await (tool as TaskTool).callAsTask(input, caller, deadline);
    } catch (error) {
      logger.error('tool call failed', { tool: name, transport: 'mcp', error: error as Error });
      answered = { answer: { ok: false, error: { code: 'internal', message: INTERNAL_MESSAGE } }, task: undefined };
    }
    const { answer, task } = answered;
    const clientKey = input[IDEMPOTENCY_KEY_FIELD];
    const pending = 'status' in answer && answer.status === 'pending';
    if (!pending || task?.status !== 'working' || typeof clientKey !== 'string') {
      return toCallToolResult(name, true, answer);
    }
    const taskId = taskIdOf(name, clientKey, task.callId);
    // The pending answer it replaces says when asking again is worth it: the task says the same.
    const wait = (answer as { readonly retry_after_ms?: number }).retry_after_ms;
    const waited = { ...task, pollIntervalMs: wait ?? task.pollIntervalMs };
    return { resultType: 'task', ...extensionTaskOf(taskId, waited, wordingOf(name, clientKey, 'modern')) };
  }

  if (era === 'legacy') addLegacyTaskHandlers(server, byName);
  else addExtensionTaskHandlers(server, byName);
  return server;
}

/**
 * The tasks extension's methods (SEP-2663) over the call record: `tasks/get` (one consistent GetItem, no
 * write), `tasks/update` (a task here never asks for input: acknowledged, nothing to take), `tasks/cancel`
 * (acknowledged, nothing changes: cancellation is cooperative, and a call is never stopped — a claim
 * precedes the effect, so a working call may have made it). Each answers `-32021` to a client that did not declare
 * the extension, and the same `-32602` Task not found for an unknown, malformed, expired, erased or
 * another caller's task id.
 */
function addExtensionTaskHandlers(server: Server, byName: ReadonlyMap<string, McpTool>): void {
  server.setRequestHandler('tasks/get', { params: TaskParams }, async function getTask({ taskId }, ctx) {
    requireTasksExtension(ctx);
    const { tool, clientKey, task } = await readTask(byName, taskId, requestContextOf(ctx).caller, 'modern');
    const detailed = extensionTaskOf(taskId, task, wordingOf(tool, clientKey, 'modern'), function resultOf(answer) {
      return toCallToolResult(tool, true, answer);
    });
    return { ...detailed };
  });

  // Its `inputResponses` reach the handler as the SDK lifts them out of the params (`ctx.mcpReq`), as for
  // any multi-round-trip request.
  server.setRequestHandler('tasks/update', { params: TaskParams }, async function updateTask({ taskId }, ctx) {
    requireTasksExtension(ctx);
    if (typeof ctx.mcpReq.inputResponses !== 'object' || ctx.mcpReq.inputResponses === null) {
      throw new ProtocolError(
        ProtocolErrorCode.InvalidParams,
        'Invalid params for tasks/update: inputResponses: required, an object of responses by input request key',
      );
    }
    // Known or not found, as tasks/get reads it. No task here is ever input_required: every response
    // names a request not outstanding, which the spec says to ignore.
    await readTask(byName, taskId, requestContextOf(ctx).caller, 'modern');
    return {};
  });

  // Cancellation is cooperative: the server MUST acknowledge a known task's cancel (empty result) and need
  // not stop it. A call is not stopped (a claim precedes the effect: a working call may have made it), so
  // nothing changes and the task ends `completed` as it would have. -32602 stays what the extension says it
  // is — no such task — lest a client drop a task whose call still runs and mint a new key for it.
  server.setRequestHandler('tasks/cancel', { params: TaskParams }, async function cancelTask({ taskId }, ctx) {
    requireTasksExtension(ctx);
    await readTask(byName, taskId, requestContextOf(ctx).caller, 'modern');
    return {};
  });
}

/**
 * 2025-11-25's `tasks/get` and `tasks/result` (SDK v2 keeps their wire schemas but no runtime: they are
 * registered as the SDK registers any method it does not type).
 */
function addLegacyTaskHandlers(server: Server, byName: ReadonlyMap<string, McpTool>): void {
  server.setRequestHandler('tasks/get', { params: TaskParams }, async function getTask({ taskId }, ctx) {
    const { caller } = requestContextOf(ctx);
    const { tool, clientKey, task } = await readTask(byName, taskId, caller, 'legacy');
    return mcpTaskOf(taskId, task, wordingOf(tool, clientKey));
  });

  // tasks/result waits for a working task (reads only) until it is terminal, for TASK_RESULT_HOLD_MS at most
  // (and never past this request's time): then it says so (the client polls tasks/get and asks again).
  server.setRequestHandler('tasks/result', { params: TaskParams }, async function getTaskResult({ taskId }, ctx) {
    const { caller, deadline } = requestContextOf(ctx);
    // What is left of the hold: of TASK_RESULT_HOLD_MS, and of the invocation's time.
    const holdUntil = deadline.getRemainingTimeInMillis() - TASK_RESULT_HOLD_MS;
    for (;;) {
      const { tool, task } = await readTask(byName, taskId, caller, 'legacy');
      if (task.status !== 'working') {
        return { ...toCallToolResult(tool, true, task.result), _meta: { [RELATED_TASK_META_KEY]: { taskId } } };
      }
      const remaining = deadline.getRemainingTimeInMillis();
      const wait = Math.min(task.pollIntervalMs, TASK_RESULT_HOLD_MS, remaining - holdUntil);
      if (ctx.mcpReq.signal.aborted || wait <= 0 || remaining < wait + RESULT_DEADLINE_MARGIN_MS) {
        throw new ProtocolError(
          ProtocolErrorCode.InternalError,
          `the task is still working (tasks/result waits at most ${TASK_RESULT_HOLD_MS} ms): poll tasks/get every pollInterval, then ask tasks/result again once it is terminal`,
          { taskId, status: 'working', pollInterval: task.pollIntervalMs },
        );
      }
      await new Promise((resolve) => setTimeout(resolve, wait));
    }
  });
}
