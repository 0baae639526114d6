import { randomUUID } from 'node:crypto';
import type * as z from 'zod/mini';
import type { Identity, InvocationDeadline, JsonObject, ToolDefinition, ToolResult, ToolRuntime } from '../idempotency';
import { defineTool } from '../idempotency/definition';
import type { CoreServices } from '../lambda/core-services';
import type { AnyToolModule } from '../tools/tool-module';
import { createToolRuntime } from '../tools/tool-runtime';

export interface ToolHarnessOptions {
  /**
   * How long each call may run: the Lambda deadline the runtime sees, and so the lock a claim holds.
   * @default 10_000 (the deployed functions' timeout)
   */
  readonly deadlineMs?: number;
}

/** The arguments a call sends: the tool's arguments and its `idempotency_key`. */
export type CallArguments<M extends AnyToolModule> = z.input<M['args']> & { readonly idempotency_key: string };

/** What `crashAndRetry` observed, in order. */
export interface CrashAndRetry<R extends JsonObject> {
  /** A call with the same key while the dead worker's lock still held: `pending`. */
  readonly whileLocked: ToolResult<R>;
  /** The retry after the lock ran out: it takes the claim over and runs the tool again, same downstream key. */
  readonly retry: ToolResult<R>;
  /** One more call with the same key: the retry's receipt, replayed. */
  readonly replay: ToolResult<R>;
}

/** One tool on the real runtime (claims, replays, conflicts, takeovers) over a test store. */
export interface ToolHarness<M extends AnyToolModule> {
  /** The tool's runnable definition, bound to the services the test composed. */
  readonly definition: ToolDefinition;
  readonly runtime: ToolRuntime;
  /** The caller every call without one is made as (a tenant of its own). */
  readonly caller: Identity;
  /** One call, as its Lambda would make it: a first execution, a replay, a conflict, `invalid_args`… */
  call(args: CallArguments<M>, caller?: Identity): Promise<ToolResult<ReceiptOf<M>>>;
  /**
   * A worker that dies right after the tool's effect (its `execute` ran, nothing was stored), then the
   * same call again: first while its lock holds, then after it ran out (a real wait of `lockMs`), then
   * once more. The tool passes if the retry did not do the effect a second time — which the test checks
   * in its own tables — and the replay returns the retry's receipt.
   */
  crashAndRetry(
    args: CallArguments<M>,
    caller?: Identity,
    options?: { readonly lockMs?: number },
  ): Promise<CrashAndRetry<ReceiptOf<M>>>;
}

type ReceiptOf<M> = M extends { bind(services: never): ToolDefinition<z.ZodMiniObject, infer R> } ? R : JsonObject;

/** A deadline like a Lambda context's: `ms` from now, counting down in real time. */
function deadlineIn(ms: number): InvocationDeadline {
  const end = Date.now() + ms;
  return { getRemainingTimeInMillis: () => end - Date.now() };
}

/** A caller no other test uses. */
function newCaller(): Identity {
  return { tenant: `tenant-${randomUUID()}`, user: 'user' };
}

export function toolHarness<M extends AnyToolModule>(
  module: M,
  services: unknown,
  core: CoreServices,
  env: NodeJS.ProcessEnv,
  options: ToolHarnessOptions = {},
): ToolHarness<M> {
  const runtime = createToolRuntime(core, env);
  const definition = module.bind(services) as ToolDefinition;
  const deadlineMs = options.deadlineMs ?? 10_000;
  const defaultCaller = newCaller();
  async function call(args: CallArguments<M>, caller: Identity = defaultCaller) {
    return (await runtime.invoke(definition, caller, args, deadlineIn(deadlineMs))) as ToolResult<ReceiptOf<M>>;
  }
  return {
    definition,
    runtime,
    caller: defaultCaller,
    call,
    async crashAndRetry(args, caller = defaultCaller, { lockMs = 300 } = {}) {
      let died!: () => void;
      const effectDone = new Promise<void>((resolve) => {
        died = resolve;
      });
      const dying = defineTool({
        ...definition,
        async execute(toolArgs, context) {
          await definition.execute(toolArgs, context);
          died();
          return new Promise<never>(function neverAnswers() {});
        },
      });
      const lockEnds = Date.now() + lockMs;
      // The first worker claims, does the effect, and is never heard of again. If it answers instead (the
      // key was used before: a replay; the tool refused), there was no crash to retry: say so at once.
      const first = runtime.invoke(dying, caller, args, deadlineIn(lockMs));
      const answeredFirst = await Promise.race([effectDone.then(() => undefined), first]);
      if (answeredFirst !== undefined) {
        throw new Error(
          `crashAndRetry: the first worker never ran ${definition.name}'s effect, it answered ${JSON.stringify(answeredFirst)} — use a key no earlier call used, and arguments the tool accepts`,
        );
      }
      const whileLocked = await call(args, caller);
      await new Promise((resolve) => setTimeout(resolve, Math.max(0, lockEnds - Date.now()) + 50));
      const retry = await call(args, caller);
      const replay = await call(args, caller);
      return { whileLocked, retry, replay };
    },
  };
}
