import type * as z from 'zod/mini';
import type { LambdaHandler } from '../http/boundary';
import {
  defineTool,
  type Execution,
  type JsonObject,
  type ToolContext,
  type ToolDefinition,
} from '../idempotency/definition';
import type { ToolServices } from '../services';
import type { DomainTableId } from '../store/tables';

/** A DynamoDB action a tool's own code may send to a domain table. */
export type DynamoAction =
  | 'dynamodb:GetItem'
  | 'dynamodb:PutItem'
  | 'dynamodb:UpdateItem'
  | 'dynamodb:DeleteItem'
  | 'dynamodb:Query';

/**
 * The DynamoDB access a tool's own code needs, per domain table. The idempotency table's access is the
 * runtime's and every tool gets it; this is what the tool adds. It becomes the tool's IAM grants in
 * the stack, and a test compares it with the commands the tool really sends on DynamoDB Local.
 */
export type TableAccess = Readonly<Partial<Record<DomainTableId, readonly DynamoAction[]>>>;

/** What a tool file declares: its definition, the access its code needs, and its domain logic. */
export interface ToolSpec<N extends string, S extends z.ZodMiniObject, R extends JsonObject>
  extends Omit<ToolDefinition<S, R>, 'name' | 'execute'> {
  /** Tool name, snake_case: the route `POST /tools/<name>`, the Lambda entry `lambdas/<name>.ts`. */
  readonly name: N;
  /** The domain tables and actions `execute` uses (through `services`). */
  readonly access: TableAccess;
  /**
   * The domain logic: throws `ToolError`s for business failures. What it must guarantee: its effect
   * happens at most once per `context.downstreamKey` (a conditional write keyed by it, or a provider
   * that honours it), because a crashed call is run again with the same key.
   */
  execute(args: z.output<S>, context: ToolContext, services: ToolServices): Promise<Execution<R>>;
}

/** A tool as the registry holds it: everything but the services, which the entry point binds. */
export interface ToolModule<
  N extends string = string,
  S extends z.ZodMiniObject = z.ZodMiniObject,
  R extends JsonObject = JsonObject,
> extends Omit<ToolSpec<N, S, R>, 'execute'> {
  /** The runnable definition, its domain logic bound to `services`. */
  bind(services: ToolServices): ToolDefinition<S, R>;
}

/** Any tool module, whatever its schema and receipt. */
// biome-ignore lint/suspicious/noExplicitAny: the registry holds tools of every schema and receipt
export type AnyToolModule = ToolModule<string, any, any>;

/**
 * Declares a tool in its own file. The definition is checked here, when the module loads (a bad name,
 * a non-strict schema or a TTL shorter than the lock is refused before any call).
 */
export function defineToolModule<const N extends string, S extends z.ZodMiniObject, R extends JsonObject>(
  spec: ToolSpec<N, S, R>,
): ToolModule<N, S, R> {
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

/** The Lambda handler of one tool, tagged with the tool it serves (see `registered`). */
export type ToolHandler<N extends string> = LambdaHandler & { readonly tool: N };

/** What a tool's Lambda entry (`lambdas/<name>.ts`) exports. */
export interface ToolEntryModule {
  readonly handler: ToolHandler<string>;
}

/**
 * One registry line: a tool module, checked by the compiler against its Lambda entry. The type
 * argument is the entry module, `typeof import('../../lambdas/<name>')`:
 *  - a tool without its entry file does not compile (the import type cannot be resolved);
 *  - an entry that serves another tool does not compile (its handler's `tool` is another name);
 *  - a line without the type argument does not compile (`Entry` defaults to `never`);
 *  - an entry whose handler is typed with a wide `ToolHandler<string>` does not compile either.
 * The type argument is erased at build time: no bundle loads the entry through the registry.
 */
export function registered<Entry extends ToolEntryModule = never>(
  module: [Entry] extends [never]
    ? never
    : string extends Entry['handler']['tool']
      ? never
      : AnyToolModule & { readonly name: Entry['handler']['tool'] },
): AnyToolModule & { readonly name: Entry['handler']['tool'] } {
  return module;
}
