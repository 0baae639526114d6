import type * as z from 'zod/mini';
import type { TableAccess } from '../api/access';
import type { ToolTypes } from '../client/types';
import {
  defineTool,
  type Execution,
  type JsonObject,
  type ToolContext,
  type ToolDefinition,
} from '../idempotency/definition';

/**
 * What a tool file declares: its definition, the access its code needs, and its domain logic over the
 * services `Svc` it is given (its stores, a provider: whatever the app composes in its entry points).
 */
export interface ToolSpec<N extends string, S extends z.ZodMiniObject, R extends JsonObject, Svc = unknown>
  extends Omit<ToolDefinition<S, R>, 'name' | 'execute'> {
  /** Tool name, snake_case: the route `POST /tools/<name>`, its Lambda entry (`lambdas/<name>.ts` here). */
  readonly name: N;
  /** The tables and actions `execute` uses (through `services`), by the tables' names in the app. */
  readonly access: TableAccess;
  /**
   * The domain logic: throws `ToolError`s for business failures. What it must guarantee: its effect
   * happens at most once per `context.downstreamKey` (a conditional write keyed by it, or a provider
   * that honours it), because a crashed call is run again with the same key. Annotate `services` with
   * the type of what it uses: that is the type the entry point must compose.
   */
  execute(args: z.output<S>, context: ToolContext, services: Svc): Promise<Execution<R>>;
}

/** A tool as an app's tool list holds it: everything but the services, which the entry point binds. */
export interface ToolModule<
  N extends string = string,
  S extends z.ZodMiniObject = z.ZodMiniObject,
  R extends JsonObject = JsonObject,
  Svc = unknown,
> extends Omit<ToolSpec<N, S, R, Svc>, 'execute'> {
  /** The runnable definition, its domain logic bound to `services`. */
  bind(services: Svc): ToolDefinition<S, R>;
}

/**
 * A tool module's types, for a client typed by the tools' own code: `args` is the zod schema's *input*
 * (what a caller may send: defaults are optional), `receipt` the receipt `execute` returns. An agent app
 * without the tools' code uses `retrysafe types` instead (plain types, no zod).
 */
export type ToolTypesOf<M> = M extends ToolModule<string, infer S, infer R> ? ToolTypes<z.input<S>, R> : never;

/** Any tool module, whatever its schema, receipt and services. */
// biome-ignore lint/suspicious/noExplicitAny: an app's list holds tools of every schema, receipt and services
export type AnyToolModule = ToolModule<string, any, any, any>;

/** The services a tool module's domain logic is bound to. */
export type ServicesOf<M> = M extends ToolModule<string, z.ZodMiniObject, JsonObject, infer Svc> ? Svc : never;

/**
 * Declares a tool in its own file. The definition is checked here, when the module loads (a bad name,
 * a non-strict schema or a TTL shorter than the lock is refused before any call).
 */
export function defineToolModule<
  const N extends string,
  S extends z.ZodMiniObject,
  R extends JsonObject,
  Svc = unknown,
>(spec: ToolSpec<N, S, R, Svc>): ToolModule<N, S, R, Svc> {
  const { access, execute, ...definition } = spec;
  function unbound(): Promise<Execution<R>> {
    return Promise.reject(new Error(`tool ${definition.name} is not bound to its services`));
  }
  defineTool({ ...definition, execute: unbound });
  return {
    ...definition,
    access,
    bind(services) {
      return defineTool({
        ...definition,
        execute: function executeBound(args, context) {
          return execute(args, context, services);
        },
      });
    },
  };
}

export type { DynamoAction, TableAccess } from '../api/access';
