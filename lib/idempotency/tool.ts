import type * as z from 'zod/mini';
import { CLOCK_SKEW_TOLERANCE_MS, MAX_WINDOWED_TTL_SECONDS } from './call-state';
import type { Identity, JsonObject } from './types';

/** Default lifetime of a client-key record: 24 hours. */
export const DEFAULT_TTL_SECONDS = 24 * 60 * 60;

/**
 * The longest an in-progress lock can last: a claim's lock is the invocation's remaining time, and a
 * Lambda invocation lasts at most 15 minutes. A record's TTL must outlive its lock, or a record could
 * expire (and be claimed again) while its first execution is still running.
 */
export const MAX_LOCK_SECONDS = 15 * 60;

/**
 * The shortest TTL a tool may have: the longest lock plus the clock skew the protocol tolerates between
 * workers (rule 2: every lock ends `CLOCK_SKEW_TOLERANCE_MS` before its record's TTL, a first claim's too).
 */
export const MIN_TTL_SECONDS = MAX_LOCK_SECONDS + Math.ceil(CLOCK_SKEW_TOLERANCE_MS / 1000);

/** What a tool's domain logic is handed besides its arguments. */
export interface ToolContext {
  /** The authenticated caller. Tenant-scoped reads and writes use `identity.tenant`. */
  readonly identity: Identity;
  /**
   * The idempotency key to send to any external provider: derived from the natural key when the tool
   * has one, else from tenant/user/tool/client key. The same string on every retry and after a crash.
   */
  readonly downstreamKey: string;
  /**
   * This call's id: the same on every attempt of one client key (a retry, a takeover, the completer),
   * different for every other key. A tool stores it with the write that commits its effect, and says
   * `replayed` when the commit it finds carries another call's id: exactly one call is told it executed.
   */
  readonly callId: string;
}

/** What a tool's domain logic returns. */
export interface Execution<R extends JsonObject> {
  /** Plain JSON, at most 32 KB: the same receipt is returned to every replay. */
  readonly receipt: R;
  /**
   * True when the effect was committed by *another* call (the commit found carries another `callId`:
   * say, the invoice was already refunded under another key); false when this call committed it —
   * now, or in an earlier attempt of the same call that died before answering.
   */
  readonly replayed: boolean;
}

/**
 * MCP-style hints shown to agents next to the schema. Every write in retrysafe is idempotent by
 * construction, so `idempotentHint` is always true and is not declared per tool.
 */
export interface ToolAnnotations {
  /** The tool changes or removes something (a refund, a close) rather than only adding. */
  readonly destructiveHint: boolean;
  /** The tool reaches a world outside retrysafe's own tables (a payment provider, a mail server). */
  readonly openWorldHint: boolean;
}

/**
 * One tool: its argument schema, natural key and domain logic, in one place. Validation, the JSON
 * Schema shown to agents and the docs are all derived from this definition.
 */
export interface ToolDefinition<S extends z.ZodMiniObject = z.ZodMiniObject, R extends JsonObject = JsonObject> {
  /** Tool name, snake_case; also the fixed prefix of its idempotency records. */
  readonly name: string;
  readonly description: string;
  /**
   * The arguments without `idempotency_key` (the runtime adds and checks it for every write): a
   * `z.strictObject` from `zod/mini`, so an unknown field is refused rather than ignored.
   */
  readonly args: S;
  readonly annotations: ToolAnnotations;
  /**
   * The natural key: the argument fields that name the one effect this tool may have (refund →
   * `['invoice_id']`). When present, the downstream key is derived from their values, so a new client
   * key, an expired record or a race cannot cause a second effect. The tool must also guard its domain
   * write with a condition on it. Excludes `dedupeWindowSeconds` (a natural key already holds across keys).
   * @default undefined (the client key alone identifies the effect)
   */
  readonly naturalKey?: readonly (keyof z.output<S> & string)[];
  /**
   * A dedupe window, in seconds, for a tool without a natural key: within it, calls with identical
   * arguments (the canonical fingerprint) from the same tenant, user and tool are one intent, whatever
   * their client keys — a model that re-issues the call with a fresh key gets the first receipt
   * (`idempotent: true`), and two fresh keys racing inside the window cause one effect. After the
   * window, identical arguments are a new intent. A caller who truly wants a repeat inside the window
   * changes the intent: different arguments (say, a distinguishing line in the body). Costs one
   * conditional write per call. Must be shorter than `ttlSeconds`.
   * @default undefined (no window: only the client key dedupes)
   */
  readonly dedupeWindowSeconds?: number;
  /**
   * The receipt's schema, for agents (the MCP `outputSchema`) and typed clients. Documentation of
   * what `execute` returns; the runtime stores whatever plain JSON the tool returns.
   * @default undefined (any JSON object)
   */
  readonly receipt?: z.ZodMiniObject;
  /**
   * How long a completed client-key record is kept, in seconds. At least {@link MIN_TTL_SECONDS}.
   * @default DEFAULT_TTL_SECONDS (24 hours)
   */
  readonly ttlSeconds?: number;
  /**
   * The call may outlast the request that makes it (a provider that takes minutes). Where its caller
   * takes a task — MCP, a client that declared the tasks extension (2026-07-28) or sent a task-augmented
   * call (2025-11-25) — the request answers the task at once and the completer runs the call
   * (`InvokeOptions.handOff`): as its second attempt, so a business error is its stored outcome, not a
   * released key. Everywhere else (REST, a client without tasks) the request runs it, as any call.
   * @default false
   */
  readonly longRunning?: boolean;
  /**
   * The domain logic. Throws `ToolError`s for business failures: on a call's first attempt they release
   * its claim (nothing happened); on a later one they are its stored outcome (an earlier attempt may have
   * made the effect).
   */
  execute(args: z.output<S>, context: ToolContext): Promise<Execution<R>>;
}

const TOOL_NAME = /^[a-z][a-z0-9_]{0,62}$/;

/**
 * Checks a tool definition once, when it is defined, and returns it unchanged. A TTL that does not
 * outlive the in-progress lock is refused here rather than discovered as a double execution.
 */
export function defineTool<S extends z.ZodMiniObject, R extends JsonObject>(
  tool: ToolDefinition<S, R>,
): ToolDefinition<S, R> {
  const problems: string[] = [];
  if (!TOOL_NAME.test(tool.name)) problems.push(`name ${JSON.stringify(tool.name)} must match ${TOOL_NAME}`);
  if ('idempotency_key' in tool.args.shape) problems.push('args must not declare idempotency_key: the runtime adds it');
  if (tool.args._zod.def.catchall?._zod.def.type !== 'never') problems.push('args must be a z.strictObject');
  const ttl = tool.ttlSeconds ?? DEFAULT_TTL_SECONDS;
  if (!Number.isInteger(ttl) || ttl < MIN_TTL_SECONDS) {
    problems.push(
      `ttlSeconds (${ttl}) must be a whole number of seconds, at least ${MIN_TTL_SECONDS}: the ${MAX_LOCK_SECONDS} s in-progress lock and the ${CLOCK_SKEW_TOLERANCE_MS / 1000} s clock skew tolerated`,
    );
  }
  for (const field of tool.naturalKey ?? []) {
    if (!(field in tool.args.shape)) problems.push(`naturalKey field ${field} is not an argument`);
  }
  if (tool.naturalKey?.length === 0) problems.push('naturalKey must name at least one field');
  const window = tool.dedupeWindowSeconds;
  if (window !== undefined) {
    if (tool.naturalKey) problems.push('dedupeWindowSeconds and naturalKey exclude each other');
    if (!Number.isInteger(window) || window <= 0 || window >= ttl) {
      problems.push(`dedupeWindowSeconds (${window}) must be a whole number of seconds in (0, ttlSeconds)`);
    }
    if (ttl > MAX_WINDOWED_TTL_SECONDS) {
      problems.push(
        `ttlSeconds (${ttl}) must be at most ${MAX_WINDOWED_TTL_SECONDS} (7 days) with a dedupe window: its intent lives that long past the window, so that a call asked in it finds it under any TTL`,
      );
    }
  }
  if (tool.longRunning !== undefined && typeof tool.longRunning !== 'boolean') {
    problems.push(`longRunning (${JSON.stringify(tool.longRunning)}) must be true or false`);
  }
  if (problems.length > 0) throw new TypeError(`invalid tool definition: ${problems.join('; ')}`);
  return tool;
}
