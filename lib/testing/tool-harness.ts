import { randomUUID } from 'node:crypto';
import type * as z from 'zod/mini';
import type {
  Execution,
  Identity,
  InvocationDeadline,
  JsonObject,
  ToolDefinition,
  ToolResult,
  ToolRuntime,
} from '../idempotency';
import { defineTool } from '../idempotency/definition';
import type { CoreServices } from '../lambda/core-services';
import { createToolRuntime } from '../lambda/runtime';
import type { AnyToolModule } from '../tools/tool-module';

export interface ToolHarnessOptions {
  /**
   * How long each call may run: the Lambda deadline the runtime sees, and so the lock a claim holds.
   * @default 10_000 (the deployed functions' timeout)
   */
  readonly deadlineMs?: number;
}

/** The arguments a call sends: the tool's arguments and its `idempotency_key`. */
export type CallArguments<M extends AnyToolModule> = z.input<M['args']> & { readonly idempotency_key: string };

/** How `crashAndRetry` runs, and how it sees the tool's effect. */
export interface CrashAndRetryOptions {
  /**
   * How long the dying worker's lock holds: its deadline, and the real wait before the retry. The call
   * made "while locked" must be answered before it ends: on a busy machine (a CI runner beside other work)
   * 300 ms was not always enough, and that call took the key over instead of answering `pending`.
   * @default 2000
   */
  readonly lockMs?: number;
  /**
   * How many times the effect has happened so far, as the world shows it: the items the tool creates (a
   * Query of the test's tenant), the requests a fake provider received. Read before the first worker,
   * after its crash and at the end: the crash must have made the effect once, and the retry and the
   * replay nothing more. Without it the harness cannot see the effect; the test then checks its tables.
   * @default undefined (the effect is not counted)
   */
  readonly effects?: () => Promise<number>;
}

/** What `crashAndRetry` observed, in order. */
export interface CrashAndRetry<R extends JsonObject> {
  /**
   * A call with the same key while the dead worker's lock still held: `pending` (made without attaching:
   * an attached call would wait for the lock's end and be the retry).
   */
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
   * once more. It fails (rejects, naming the rule) unless exactly one of these answers says
   * `idempotent: false` — the retry: it is the call whose write committed the effect, run again with the
   * same `callId` — and, with `effects`, unless the effect happened once. (If the dying worker's
   * `execute` said `replayed: true`, the effect was another call's, and no answer may say false.) The
   * test then checks the receipts: the replay returns the retry's.
   */
  crashAndRetry(
    args: CallArguments<M>,
    caller?: Identity,
    options?: CrashAndRetryOptions,
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

/** Whether an answer tells its caller that this call made the effect. */
function saysExecuted(answer: ToolResult<JsonObject>): boolean {
  return 'idempotent' in answer && answer.idempotent === false;
}

/**
 * Rule 5 of docs/state-machine.md over one crash: the dying worker never answered, so of the answers its
 * call and the others got, exactly one says `idempotent: false` — the retry's, the same call (same
 * `callId`) whose write committed the effect — unless the dying worker's execute found the effect
 * another call's (`replayed: true`): then none.
 */
function checkOneExecutedAnswer(
  tool: string,
  crashed: Execution<JsonObject>,
  answers: Readonly<Record<keyof CrashAndRetry<JsonObject>, ToolResult<JsonObject>>>,
): void {
  const executed = Object.entries(answers).filter(([, answer]) => saysExecuted(answer));
  const wanted = crashed.replayed ? 0 : 1;
  if (executed.length === wanted) return;
  const said = Object.entries(answers)
    .map(
      ([name, answer]) =>
        `${name}: ${'idempotent' in answer ? `idempotent: ${answer.idempotent}` : JSON.stringify(answer)}`,
    )
    .join(', ');
  const why = crashed.replayed
    ? `the dying worker's execute said replayed: true (another call made the effect), yet ${executed.length} answer(s) said idempotent: false`
    : `the dying worker's execute committed the effect (replayed: false) and never answered, so its retry — the same call, the same context.callId — must say idempotent: false, and only it; ${executed.length} answer(s) did`;
  throw new Error(
    `crashAndRetry: ${tool} breaks the rule "exactly one answer per effect says idempotent: false — the call whose write committed the effect": ${why} (${said}). Stamp the commit with context.callId and answer replayed: stamp !== context.callId (createOnce in retrysafe/tools/dynamodb does), not replayed: !written.`,
  );
}

/** With `effects`: the dying worker made the effect once (unless it was another call's), and nobody since. */
function checkEffectOnce(
  tool: string,
  crashed: Execution<JsonObject>,
  [before, afterCrash, atEnd]: readonly [number, number, number],
): void {
  const byCrash = afterCrash - before;
  const wanted = crashed.replayed ? 0 : 1;
  if (byCrash === wanted && atEnd === afterCrash) return;
  throw new Error(
    `crashAndRetry: ${tool}'s effect must happen once per downstreamKey, however often a crashed call is run again: effects() counted ${before} before, ${afterCrash} after the crash (want ${before + wanted}), ${atEnd} after the retry and the replay (want ${before + wanted}). Derive what execute creates from context.downstreamKey and write it conditionally, or send the key to a provider that honours it.`,
  );
}

export function toolHarness<M extends AnyToolModule>(
  module: M,
  services: unknown,
  core: CoreServices,
  env: NodeJS.ProcessEnv,
  options: ToolHarnessOptions = {},
): ToolHarness<M> {
  const runtime = createToolRuntime(core, env);
  // The call made while the dead worker's lock holds answers at once: attaching, it would wait for the
  // lock's end and take the call over itself — the retry's part in crashAndRetry's sequence.
  const unattached = createToolRuntime(core, env, { attach: { maxWaitMs: 0 } });
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
    async crashAndRetry(args, caller = defaultCaller, { lockMs = 2_000, effects } = {}) {
      let died!: (execution: Execution<JsonObject>) => void;
      const effectDone = new Promise<Execution<JsonObject>>((resolve) => {
        died = resolve;
      });
      const dying = defineTool({
        ...definition,
        async execute(toolArgs, context) {
          died(await definition.execute(toolArgs, context));
          return new Promise<never>(function neverAnswers() {});
        },
      });
      const effectsBefore = await effects?.();
      const lockEnds = Date.now() + lockMs;
      // The first worker claims, does the effect, and is never heard of again. If it answers instead (the
      // key was used before: a replay; the tool refused), there was no crash to retry: say so at once.
      const first = runtime.invoke(dying, caller, args, deadlineIn(lockMs));
      const crashed = await Promise.race([effectDone.then((execution) => ({ execution })), first]);
      if (!('execution' in crashed)) {
        throw new Error(
          `crashAndRetry: the first worker never ran ${definition.name}'s effect, it answered ${JSON.stringify(crashed)} — use a key no earlier call used, and arguments the tool accepts`,
        );
      }
      const effectsAfterCrash = await effects?.();
      const whileLocked = (await unattached.invoke(definition, caller, args, deadlineIn(deadlineMs))) as ToolResult<
        ReceiptOf<M>
      >;
      await new Promise((resolve) => setTimeout(resolve, Math.max(0, lockEnds - Date.now()) + 50));
      const retry = await call(args, caller);
      const replay = await call(args, caller);
      const observed = { whileLocked, retry, replay };
      checkOneExecutedAnswer(definition.name, crashed.execution, observed);
      if (effects)
        checkEffectOnce(definition.name, crashed.execution, [effectsBefore!, effectsAfterCrash!, await effects()]);
      return observed;
    },
  };
}
