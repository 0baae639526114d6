import * as z from 'zod/mini';
import {
  type CallTask,
  callAsTask,
  fieldProblem,
  IDEMPOTENCY_KEY_FIELD,
  type Identity,
  type InvocationDeadline,
  type JsonObject,
  readTask,
  type ToolDefinition,
  type ToolResult,
  type ToolRuntime,
} from '../idempotency';
import { foundAnswer, operationAnswer, readErrorAnswer } from '../reads/answers';
import { type OperationSource, readOperation } from '../reads/operation';
import { annotationsOf, describeTool, jsonSchemaOf, type KeyKinds } from '../tools/catalog';
import type { ReadModule } from '../tools/read-module';
import type { ToolModule } from '../tools/tool-module';

/** A tool as an MCP `tools/list` entry. */
export interface McpToolListing {
  readonly name: string;
  readonly description: string;
  readonly inputSchema: { type: 'object'; [key: string]: unknown };
  readonly outputSchema: { type: 'object'; [key: string]: unknown };
  readonly annotations: {
    readonly readOnlyHint: boolean;
    readonly destructiveHint: boolean;
    readonly idempotentHint: boolean;
    readonly openWorldHint: boolean;
  };
  /**
   * MCP tasks (2025-11-25): a write may be called as a task (`optional`: a client that does not ask for
   * one gets today's answer); a read may not (no `execution`: `forbidden`).
   */
  readonly execution?: { readonly taskSupport: 'optional' };
  /** Which keys protect a write (retrysafe's own field, next to the standard ones). */
  readonly _meta?: { readonly 'retrysafe/idempotency': KeyKinds };
}

/** What a tool call answers, before it becomes MCP content: the HTTP API's answer object. */
export type Answer = ToolResult | { ok: true; [key: string]: unknown };

/** One MCP tool: its listing and how a call runs. */
export interface McpTool {
  readonly listing: McpToolListing;
  call(input: Record<string, unknown>, caller: Identity, deadline: InvocationDeadline): Promise<Answer>;
  /**
   * A write's call under the caller's client key, as a task: its record, read (one GetItem, no write);
   * undefined when there is none. Writes only.
   */
  task?(clientKey: string, caller: Identity): Promise<CallTask | undefined>;
  /**
   * A write called as a task: `call`, and the task the call is — what its attempt wrote or read, never
   * another read (`callAsTask`). A tool that may run long (`longRunning`) is handed to the completer
   * (`InvokeOptions.handOff`): the task comes back at once. Writes only.
   */
  callAsTask?(
    input: Record<string, unknown>,
    caller: Identity,
    deadline: InvocationDeadline,
  ): Promise<{ readonly answer: Answer; readonly task: CallTask | undefined }>;
}

const RETRY_HINT =
  ' Mint one idempotency_key per intent and send the same key on every retry of it: a retry with the same key and arguments returns the first receipt instead of doing it again.';

const LISTING_ORDER = [
  'name',
  'description',
  'inputSchema',
  'outputSchema',
  'annotations',
  'execution',
  '_meta',
] as const;

/** What a `tools/call` reads of a listing (the annotations tell a write from a read): built at once. */
type BuiltAtOnce = Pick<McpToolListing, 'name' | 'description' | 'annotations' | 'execution'>;
type BuiltLater = Omit<McpToolListing, keyof BuiltAtOnce>;

/**
 * A tool's listing: its name, description and annotations at once, the rest built on first read.
 * Turning every tool's zod schemas into JSON Schema was a large part of the MCP function's cold start,
 * and a `tools/call` reads none of it.
 */
function listingOf(
  named: BuiltAtOnce,
  fields: ReadonlyArray<keyof BuiltLater>,
  build: () => BuiltLater,
): McpToolListing {
  let built: BuiltLater | undefined;
  function read<F extends keyof BuiltLater>(field: F): BuiltLater[F] {
    built ??= build();
    return built[field];
  }
  // In the order MCP lists a tool's fields, whichever are built later.
  const listing = {};
  const later = new Set<string>(fields);
  for (const field of new Set<string>([...LISTING_ORDER, ...Object.keys(named), ...fields])) {
    if (field in named) {
      Object.defineProperty(listing, field, { enumerable: true, value: named[field as keyof BuiltAtOnce] });
    } else if (later.has(field)) {
      Object.defineProperty(listing, field, { enumerable: true, get: () => read(field as keyof BuiltLater) });
    }
  }
  return listing as McpToolListing;
}

/** A write tool, as MCP lists and calls it: the runtime's answer, unchanged. */
export function writeTool(tool: ToolDefinition, runtime: ToolRuntime): McpTool {
  return {
    listing: listingOf(
      {
        name: tool.name,
        description: `${tool.description}${RETRY_HINT}`,
        annotations: annotationsOf(tool),
        execution: { taskSupport: 'optional' },
      },
      ['inputSchema', 'outputSchema', '_meta'],
      function describeWrite() {
        const description = describeTool(tool);
        return {
          inputSchema: description.input_schema as McpToolListing['inputSchema'],
          outputSchema: description.output_schema as McpToolListing['outputSchema'],
          _meta: { 'retrysafe/idempotency': description.idempotency },
        };
      },
    ),
    call: (input, caller, deadline) => runtime.invoke(tool, caller, input, deadline, { transport: 'mcp' }),
    task: (clientKey, caller) => readTask(runtime, tool, caller, clientKey),
    async callAsTask(input, caller, deadline) {
      const { result, task } = await callAsTask(runtime, tool, caller, input, deadline, {
        transport: 'mcp',
        handOff: tool.longRunning === true,
      });
      return { answer: result, task };
    },
  };
}

/** A read's listing: its schemas built on first read. */
function readListing(
  named: Pick<McpToolListing, 'name' | 'description'>,
  args: z.ZodMiniObject,
  found: z.ZodMiniType,
): McpToolListing {
  return listingOf(
    { ...named, annotations: READ_ANNOTATIONS },
    ['inputSchema', 'outputSchema'],
    function describeRead() {
      return { inputSchema: inputSchemaOf(args), outputSchema: readOutputSchema(found) };
    },
  );
}

/** The JSON Schema of a read's input, as MCP wants it (an object at the root, MCP's default dialect). */
function inputSchemaOf(schema: z.ZodMiniObject): McpToolListing['inputSchema'] {
  return jsonSchemaOf(schema, 'input') as McpToolListing['inputSchema'];
}

const READ_ANNOTATIONS = { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false };

/** A read's output schema: what it finds, or its refusal; an object at the root, as MCP wants. */
function readOutputSchema(found: z.ZodMiniType): McpToolListing['outputSchema'] {
  return { type: 'object', ...jsonSchemaOf(z.union([found, readErrorAnswer])) } as McpToolListing['outputSchema'];
}

const operationArgs = z.strictObject({
  tool: z.string().check(z.minLength(1), z.maxLength(64), z.describe('The write tool the key was used with.')),
  [IDEMPOTENCY_KEY_FIELD]: z.string().check(z.minLength(1), z.maxLength(255), z.describe('The key of the call.')),
});

/** Parses a read's arguments, or answers `invalid_args` naming the field. */
function parsed<S extends z.ZodMiniObject>(schema: S, input: unknown): z.output<S> | Answer {
  const result = schema.safeParse(input);
  if (result.success) return result.data;
  return { ok: false, error: { code: 'invalid_args', message: fieldProblem(result.error, 'arguments') } };
}

function isAnswer(value: unknown): value is Answer {
  return typeof value === 'object' && value !== null && 'ok' in value;
}

/** `get_operation`: the outcome of an earlier write by its tool and key — every app's MCP endpoint has it. */
export function operationReadTool(operations: OperationSource): McpTool {
  return {
    listing: readListing(
      {
        name: 'get_operation',
        description:
          'The outcome of an earlier write, by its tool and idempotency_key: completed with its receipt, or pending. Use it after a lost answer or a pending one, instead of writing again. Read-only.',
      },
      operationArgs,
      operationAnswer,
    ),
    async call(input, caller) {
      const args = parsed(operationArgs, input);
      return isAnswer(args) ? args : readOperation(operations, caller, args.tool, args[IDEMPOTENCY_KEY_FIELD]);
    },
  };
}

/** An app's own read (`defineReadModule`), bound to `services`: a read-only MCP tool of its name. */
export function readTool<Svc>(read: ReadModule<string, z.ZodMiniObject, z.ZodMiniObject, Svc>, services: Svc): McpTool {
  const bound = read.bind(services);
  return {
    // Its answer's schema is built on first read of the listing, never for a call.
    listing: readListing(
      { name: read.name, description: read.description },
      read.args,
      z.lazy(() => foundAnswer(read.found)),
    ),
    call: (input, caller) => bound.call(input, caller, 'invalid_args'),
  };
}

/**
 * Every tool an MCP endpoint serves: each write, then the app's own reads (`reads`), each bound to
 * `services`, then `get_operation`.
 */
export function mcpTools<Svc>(
  tools: readonly ToolModule<string, z.ZodMiniObject, JsonObject, Svc>[],
  services: Svc,
  runtime: ToolRuntime,
  reads: readonly ReadModule<string, z.ZodMiniObject, z.ZodMiniObject, Svc>[],
): McpTool[] {
  return [
    ...tools.map((tool) => writeTool(tool.bind(services), runtime)),
    ...reads.map((read) => readTool(read, services)),
    operationReadTool({ runtime, toolNames: tools.map((tool) => tool.name) }),
  ];
}
