import type * as z from 'zod/mini';
import { fieldProblem } from '../idempotency/definition';
import { type ErrorCode, InternalError } from '../idempotency/errors';
import type { Identity, JsonObject } from '../idempotency/types';
import type { TableAccess } from './tool-module';

/** What a read answers, whatever carries it (an HTTP body, an MCP tool result). */
export type ReadAnswer<T extends object> =
  | ({ ok: true } & T)
  | {
      ok: false;
      /** `get_operation` only: the error is the call's stored outcome, not a refusal of this read. */
      idempotent?: true;
      error: { code: ErrorCode; message: string };
    };

/** A read's refusal: `not_found` for what is not there (or is another tenant's), naming the field. */
export function readFailure(code: ErrorCode, message: string): ReadAnswer<never> {
  return { ok: false, error: { code, message } };
}

/** A caller's value as an error message may echo it: at most 64 characters. */
export function clip(value: string): string {
  return value.length > 64 ? `${value.slice(0, 64)}…` : value;
}

/**
 * What a read file declares: one read of the app's own data, served over REST (`GET path`) and MCP (a
 * read-only tool of the same name), documented in the OpenAPI document — all from this one definition.
 */
export interface ReadSpec<N extends string, S extends z.ZodMiniObject, F extends z.ZodMiniObject, Svc = unknown> {
  /** snake_case: the MCP tool's name and the Lambda entry's (`<name>.ts`). */
  readonly name: N;
  /** What agents are told it reads (MCP listing; the OpenAPI operation's summary is its first sentence). */
  readonly description: string;
  /** Its `GET` route, e.g. `/invoices/{invoice_id}`: every `{param}` is a field of `args`, and every field a param. */
  readonly path: string;
  /**
   * Its arguments: a strict object of strings — the path parameters over REST, the arguments over MCP.
   * A value the schema refuses answers `invalid_args` over MCP and `not_found` over REST (a path that
   * names nothing), naming the field; nothing is read.
   */
  readonly args: S;
  /**
   * What it finds: the answer's fields besides `ok` and `next` (its MCP `outputSchema`, its OpenAPI answer).
   * Every answer is parsed with it before it is sent: a field it does not name (a stored row's `tenant`,
   * `created_by`) or a value of another type answers `internal`, logged with the read's name and the field,
   * never the data.
   */
  readonly found: F;
  /** The tables and actions `read` uses (through `services`), by the tables' names in the app. */
  readonly access: TableAccess;
  /**
   * The read itself, for `caller` (tenant and user from the token, never from the arguments): what it
   * found, or `readFailure('not_found', …)`. A thrown error is answered `internal` (`unavailable` for a
   * store outage), logged.
   */
  read(args: z.output<S>, caller: Identity, services: Svc): Promise<ReadAnswer<z.output<F>>>;
}

/** A read as the app's list holds it: everything but the services, which the entry point binds. */
export interface ReadModule<
  N extends string = string,
  S extends z.ZodMiniObject = z.ZodMiniObject,
  F extends z.ZodMiniObject = z.ZodMiniObject,
  Svc = unknown,
> extends Omit<ReadSpec<N, S, F, Svc>, 'read'> {
  /** The runnable read, bound to `services`. */
  bind(services: Svc): BoundRead;
}

/** Any read module, whatever its arguments, answer and services. */
// biome-ignore lint/suspicious/noExplicitAny: reads of every schema and services
export type AnyReadModule = ReadModule<string, any, any, any>;

/** A read bound to its services: what the REST handler and the MCP tool run. */
export interface BoundRead {
  readonly name: string;
  /**
   * Runs the read for `caller` on unchecked `input`. `refused` decides what a bad argument answers:
   * `invalid_args` (MCP) or `not_found` (REST: a path that names nothing).
   */
  call(input: unknown, caller: Identity, refused: 'invalid_args' | 'not_found'): Promise<ReadAnswer<JsonObject>>;
}

/** The `{param}` names of a route path, in order. */
export function pathParamsOf(path: string): string[] {
  return [...path.matchAll(/\{([^}]+)\}/g)].map(([, name = '']) => name);
}

/**
 * Whether `schema` takes text, as a path parameter is: a string (of any format), a string enum or
 * literal, under wrappers (optional, default, …) or at the input of a pipe.
 */
function takesText(schema: z.core.$ZodType): boolean {
  const def = schema._zod.def as z.core.$ZodTypeDef & {
    innerType?: z.core.$ZodType;
    in?: z.core.$ZodType;
    entries?: object;
    values?: unknown[];
  };
  if (def.innerType) return takesText(def.innerType);
  if (def.in) return takesText(def.in);
  const values = def.type === 'enum' ? Object.values(def.entries ?? {}) : def.values;
  return values ? values.every((value) => typeof value === 'string') : def.type === 'string';
}

/** Every problem of a read's definition, each naming the field. */
function readProblems(spec: ReadSpec<string, z.ZodMiniObject, z.ZodMiniObject, unknown>): string[] {
  const problems: string[] = [];
  if (!/^[a-z][a-z0-9_]{0,63}$/.test(spec.name)) problems.push('name: snake_case, at most 64 characters');
  if (!spec.path.startsWith('/')) problems.push('path: starts with /');
  const params = pathParamsOf(spec.path);
  const fields = Object.keys(spec.args.def.shape);
  for (const param of params) {
    if (!fields.includes(param)) problems.push(`path: {${param}} is not a field of args`);
  }
  for (const [field, schema] of Object.entries(spec.args.def.shape)) {
    if (!params.includes(field)) problems.push(`args.${field}: not a {param} of the path (REST could not send it)`);
    if (!takesText(schema)) problems.push(`args.${field}: not a string (REST sends a path parameter as text)`);
  }
  if (spec.description.trim() === '') problems.push('description: empty');
  return problems;
}

/**
 * Declares a read in its own file. Checked when the module loads: a bad name, a path and arguments that
 * do not name the same fields, or an argument that is not a string (REST sends path parameters as text:
 * `z.int()` could never match there), is refused before any call, every problem at once. Where a read's
 * route sits among the API's (`readRouteProblems`) is checked with the app's list: by the config and the
 * construct.
 */
export function defineReadModule<
  const N extends string,
  S extends z.ZodMiniObject,
  F extends z.ZodMiniObject,
  Svc = unknown,
>(spec: ReadSpec<N, S, F, Svc>): ReadModule<N, S, F, Svc> {
  const problems = readProblems(spec as unknown as ReadSpec<string, z.ZodMiniObject, z.ZodMiniObject, unknown>);
  if (problems.length > 0) throw new Error(`read ${spec.name}: ${problems.join('; ')}`);
  const { read, ...definition } = spec;
  return {
    ...definition,
    bind(services) {
      return {
        name: spec.name,
        async call(input, caller, refused) {
          const args = spec.args.safeParse(input);
          if (!args.success) return readFailure(refused, fieldProblem(args.error, 'arguments'));
          const answer = await read(args.data, caller, services);
          if (!answer.ok) return answer;
          // What it found, as `found` says it (a typed row may hold more): both transports send this.
          const { ok, ...fields } = answer;
          const found = spec.found.safeParse(fields);
          if (!found.success) {
            throw new InternalError(
              `read ${spec.name}: found refuses its answer: ${fieldProblem(found.error, 'found')}`,
            );
          }
          return { ok, ...found.data } as ReadAnswer<JsonObject>;
        },
      };
    },
  };
}
