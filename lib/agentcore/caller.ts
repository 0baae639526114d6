// The contract between the AgentCore Gateway's request interceptor (lib/agentcore/interceptor.ts) and a
// tool's function behind the gateway (a Lambda target): how a tool call reaches the function, and how the
// caller's identity rides along. Small on purpose: every tool's bundle loads it (a write's budget,
// test/infra/entries.ts).
//
// What the gateway sends a Lambda target (Amazon Bedrock AgentCore developer guide, "Lambda function input
// format"): the tool's arguments as the event, flat, no envelope; the tool's name in the invocation's client
// context, `custom.bedrockAgentCoreToolName`, prefixed by the target's name and `___`. The gateway sends a
// Lambda target no token and no claim, so the request interceptor — which sees the request's headers
// (`passRequestHeaders`) — verifies the bearer token and writes the caller into the arguments under
// `CALLER_FIELD`, over anything the agent sent there.
//
// The arguments are the agent's to write, so the function does not take the caller field on trust: the
// interceptor signs it (HMAC-SHA256, with a key only the interceptor and the gateway's functions can read)
// over the tenant, the user, the tool it was written for and an expiry, and the function checks the
// signature before it reads the caller. A caller field the agent wrote — an invocation of the function by
// anyone allowed to invoke it, another gateway without the interceptor — carries no valid signature and is
// refused like a missing one: nothing runs.
//
// The rule: on a gateway's target, no caller is read from anything the agent's arguments can carry, except
// the caller the interceptor signed. So any invocation with a client context, or whose event carries
// `CALLER_FIELD`, is the gateway's (`gatewayInvocationTool`): it is never read as API Gateway's, and one
// that names no tool is refused; and the interceptor refuses any request bound for a target that it
// cannot sign (lib/agentcore/interceptor.ts).
import { createHmac, timingSafeEqual } from 'node:crypto';
import type { Context } from 'aws-lambda';
import type { LambdaHandler } from '../http/boundary';
import { errorResponse, type HttpResponse } from '../http/status';
import type { JsonObject } from '../idempotency/types';
import type { CallerKey } from './caller-key';

/** The argument the request interceptor writes the signed caller into (a `SignedCaller`). */
export const CALLER_FIELD = '_retrysafe_caller';

/** What separates the target's name from the tool's in the tool name the gateway lists and sends. */
export const TARGET_SEPARATOR = '___';

/** The caller of a gateway call: the token's tenant claim and its `sub`. */
export interface GatewayCaller {
  readonly tenant: string;
  readonly user: string;
}

/**
 * What the interceptor writes under `CALLER_FIELD`: the caller, the tool name the call named (as the gateway
 * hands it to the target, `<target>___<tool>`), when the signature stops being accepted (epoch seconds), and
 * `mac`, the HMAC-SHA256 of the four (`callerMac`), base64url.
 */
export interface SignedCaller extends GatewayCaller {
  readonly tool: string;
  readonly expiresAtS: number;
  readonly mac: string;
}

/** How long a signed caller is accepted: the gateway invokes the target as soon as the interceptor answers. */
export const SIGNED_CALLER_TTL_SECONDS = 300;

/** The signature of a caller for one tool until `expiresAtS`, with `key`. */
export function callerMac(key: string, tenant: unknown, user: unknown, tool: string, expiresAtS: unknown): string {
  return createHmac('sha256', key)
    .update(JSON.stringify([tenant, user, tool, expiresAtS]))
    .digest('base64url');
}

/**
 * The caller a gateway invocation of `tool` carries, if the interceptor signed it with `key` for that tool
 * and it has not expired; undefined for anything else (missing, forged, another tool's, expired). The
 * caller's values are then checked as a token's claims are (`identityFromTokenClaims`).
 */
export function verifiedCaller(field: unknown, tool: string, key: string, nowMs: number): GatewayCaller | undefined {
  const { tenant, user, expiresAtS, mac } = (field ?? {}) as Partial<SignedCaller>;
  if (typeof mac !== 'string' || !((expiresAtS as number) * 1000 > nowMs)) return undefined;
  const expected = Buffer.from(callerMac(key, tenant, user, tool, expiresAtS));
  const given = Buffer.from(mac);
  return expected.length === given.length && timingSafeEqual(expected, given)
    ? { tenant: tenant as string, user: user as string }
    : undefined;
}

/** What an AgentCore Gateway sends a Lambda target: the tool's arguments, flat, and the signed caller (`CALLER_FIELD`). */
export type GatewayToolEvent = Readonly<Record<string, unknown>>;

/** The tool a gateway's tool name names: what follows its target's prefix (`<target>___<tool>`). */
export function toolOfGatewayName(name: string): string {
  const at = name.lastIndexOf(TARGET_SEPARATOR);
  return at < 0 ? name : name.slice(at + TARGET_SEPARATOR.length);
}

/**
 * A gateway invocation of `tool` (the name in its client context) to the function that runs `served`:
 * the tool's arguments and the caller the interceptor signed for that tool — or the refusal, nothing run:
 * `unauthorized` when the client context names no tool (`NO_TOOL_NAME`), `not_found` when the name is another tool's (a target on the wrong function: a deployment mistake),
 * `unauthorized` (naming `CALLER_FIELD`) when the caller field is missing, forged (its signature does not
 * verify with the key), written for another tool, or expired.
 */
export async function gatewayCall(
  event: GatewayToolEvent,
  tool: string,
  served: string,
  callerKey: CallerKey,
): Promise<HttpResponse | { readonly input: Record<string, unknown>; readonly caller: GatewayCaller }> {
  if (!tool) return errorResponse('unauthorized', NO_TOOL_NAME);
  if (toolOfGatewayName(tool) !== served) {
    return errorResponse('not_found', `tool: ${tool} is not ${served}, the tool this function runs; nothing ran`);
  }
  const { [CALLER_FIELD]: field, ...input } = event ?? {};
  const caller = verifiedCaller(field, tool, await callerKey(), Date.now());
  return caller ? { input, caller } : errorResponse('unauthorized', NO_CALLER);
}

/**
 * On a gateway's target, the tool name a gateway invocation names in its client context (with its target's
 * prefix), `''` for a gateway invocation that names none (refused by `gatewayCall`, nothing run), or
 * undefined for API Gateway's invocation.
 *
 * The event of a gateway invocation is the agent's arguments, where the agent can write API Gateway's claims:
 * it must never be read as API Gateway's. So an invocation is the gateway's when it has a client context (API
 * Gateway never sets one), whichever spelling names the tool — `bedrockAgentCoreToolName` (the developer
 * guide) or `bedrockagentcoreToolName` (an AWS tutorial) — and when its event carries `CALLER_FIELD` (the
 * interceptor writes it into every `tools/call`; no API Gateway event has it), context or not.
 */
export function gatewayInvocationTool(
  event: unknown,
  context: Pick<Context, 'clientContext'> | undefined,
): string | undefined {
  const clientContext = context?.clientContext as { custom?: Record<string, unknown> } | null | undefined;
  if (clientContext == null) {
    return event !== null && typeof event === 'object' && CALLER_FIELD in event ? '' : undefined;
  }
  const name = clientContext.custom?.bedrockAgentCoreToolName ?? clientContext.custom?.bedrockagentcoreToolName;
  return typeof name === 'string' ? name : '';
}

/** What a gateway invocation that names no tool in its client context is told: nothing was run. */
export const NO_TOOL_NAME = 'clientContext.custom.bedrockAgentCoreToolName: missing; nothing ran';

/** What a gateway call without a valid signed caller is told: nothing was run. */
export const NO_CALLER =
  "_retrysafe_caller: missing, or not signed for this tool by the gateway's interceptor; nothing ran";

/** What a tool's function answers the gateway: the answer's JSON (`ok`, the receipt or the error, `next`). */
export type GatewayAnswer = JsonObject & { readonly ok: boolean; readonly next: JsonObject };

/** A tool's (or read's) handler as the gateway calls it. */
export type GatewayToolHandler = (event: GatewayToolEvent, context: Context) => Promise<GatewayAnswer>;

/** A handler that API Gateway and an AgentCore Gateway both call: an HTTP response to one, the answer's JSON to the other. */
export type GatewayLambdaHandler = GatewayToolHandler & LambdaHandler;
