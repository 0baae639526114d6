import { IdempotencyConfig, makeIdempotent } from '@aws-lambda-powertools/idempotency';
import { DynamoDBPersistenceLayer } from '@aws-lambda-powertools/idempotency/dynamodb';
import type { Context } from 'aws-lambda';
import type { ExampleServices } from '../../app/services';
import { withInvocationDeadline } from '../../lib/store/deadline';
import {
  type EmailArgs,
  plainCreateTicket,
  plainRefund,
  plainSendEmail,
  type RefundArgs,
  type TicketArgs,
  ToolRefusal,
} from './plain-tools';
import { type BenchWorld, POWERTOOLS_TABLE } from './world';

/** The four ways the same tools are served, in the order the table shows them. */
export const APPROACHES = ['none', 'powertools-client-key', 'powertools-args-hash', 'retrysafe'] as const;
export type Approach = (typeof APPROACHES)[number];

export const TOOL_NAMES = ['refund', 'create_ticket', 'send_email'] as const;
export type ToolName = (typeof TOOL_NAMES)[number];

/** One request as API Gateway hands it to a tool's function: the caller (from its token), its key, its arguments. */
export interface ToolRequest {
  readonly tool: ToolName;
  readonly tenant: string;
  readonly user: string;
  /** The idempotency key the agent sent (the `none` and args-hash approaches ignore it). */
  readonly key: string;
  readonly args: Readonly<Record<string, unknown>>;
}

/** What the function answers (the JSON body the agent's tool hands the model). */
export type ToolAnswer = { readonly ok: boolean } & Readonly<Record<string, unknown>>;

/** Serves one request in one worker, `context` its Lambda context (the deadline on the simulated clock). */
export type ToolServer = (request: ToolRequest, context: Context) => Promise<ToolAnswer>;

export function serverOf(approach: Approach, world: BenchWorld): ToolServer {
  switch (approach) {
    case 'none':
      return noIdempotency(world.services);
    case 'powertools-client-key':
      // The textbook: the key the client sends, per caller (Powertools docs, "Idempotency key").
      return powertools(world, '[tenant, user, idempotency_key]');
    case 'powertools-args-hash':
      // A hash of the arguments (Powertools docs, "Choosing a payload subset for idempotency").
      return powertools(world, '[tenant, user, args]');
    case 'retrysafe':
      return retrysafe(world);
  }
}

/** A tool's plain function: what `none` runs and what Powertools wraps. */
type PlainTool = (services: ExampleServices, tenant: string, args: never) => Promise<Record<string, unknown>>;
const PLAIN: Record<ToolName, PlainTool> = {
  refund: plainRefund as PlainTool,
  create_ticket: plainCreateTicket as PlainTool,
  send_email: plainSendEmail as PlainTool,
};

/** An error as the function answers it: a refusal as a 4xx with its code; anything else a 500. */
function answerOfError(error: unknown): ToolAnswer {
  if (error instanceof ToolRefusal) return { ok: false, error: { code: error.code, message: error.message } };
  const name = error instanceof Error ? error.name : 'Error';
  return { ok: false, error: { code: 'internal', message: `${name}: Internal Server Error` } };
}

/** (1) No idempotency: the plain tool, every request executed. */
function noIdempotency(services: ExampleServices): ToolServer {
  return async function serveWithoutIdempotency(request) {
    try {
      return { ok: true, receipt: await PLAIN[request.tool](services, request.tenant, request.args as never) };
    } catch (error) {
      return answerOfError(error);
    }
  };
}

/** The event a Powertools-wrapped handler gets: the caller, the client's key, the arguments. */
interface PowertoolsEvent {
  readonly tenant: string;
  readonly user: string;
  readonly idempotency_key: string;
  readonly args: Readonly<Record<string, unknown>>;
}

/**
 * (2), (3) Powertools `makeIdempotent` around the plain tool, as its docs build it: a
 * `DynamoDBPersistenceLayer` on its own table, an `IdempotencyConfig` whose `eventKeyJmesPath` picks the
 * key from the event, the Lambda context passed so the in-progress lock ends with the invocation; its
 * defaults otherwise (1 h TTL, no payload validation, no local cache). A failed function deletes its
 * record, so a retry runs again; a result is stored and replayed. One persistence layer and config per
 * worker (a Lambda container serves one request at a time; two at once are two containers).
 */
function powertools(world: BenchWorld, eventKeyJmesPath: string): ToolServer {
  const handlers: Record<ToolName, (event: PowertoolsEvent, context: Context) => Promise<Record<string, unknown>>> = {
    refund: async function refund(event) {
      return plainRefund(world.services, event.tenant, event.args as unknown as RefundArgs);
    },
    create_ticket: async function create_ticket(event) {
      return plainCreateTicket(world.services, event.tenant, event.args as unknown as TicketArgs);
    },
    send_email: async function send_email(event) {
      return plainSendEmail(world.services, event.tenant, event.args as unknown as EmailArgs);
    },
  };
  return async function serveWithPowertools(request, context) {
    const persistenceStore = new DynamoDBPersistenceLayer({
      tableName: POWERTOOLS_TABLE,
      awsSdkV3Client: world.client,
    });
    const config = new IdempotencyConfig({ eventKeyJmesPath });
    const handler = makeIdempotent(handlers[request.tool], { persistenceStore, config });
    const event: PowertoolsEvent = {
      tenant: request.tenant,
      user: request.user,
      idempotency_key: request.key,
      args: request.args,
    };
    try {
      return { ok: true, receipt: await handler(event, context) };
    } catch (error) {
      return answerOfError(error);
    }
  };
}

/** (4) retrysafe: the example's tool through the runtime, as its REST function calls it. */
function retrysafe(world: BenchWorld): ToolServer {
  return async function serveWithRetrysafe(request, context) {
    const tool = world.tools[request.tool]!;
    const result = await withInvocationDeadline(context, () =>
      world.runtime.invoke(
        tool,
        { tenant: request.tenant, user: request.user },
        { idempotency_key: request.key, ...request.args },
        context,
      ),
    );
    return result as unknown as ToolAnswer;
  };
}
