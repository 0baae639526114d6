// The contract between the AgentCore Gateway's request interceptor (lib/agentcore/interceptor.ts) and a
// tool's function behind the gateway (a Lambda target): how a tool call reaches the function, and how the
// caller's identity rides along. Small on purpose: every tool's bundle loads it (the budget of a write,
// test/infra/entries.ts, had ~0.5 KB left for this).
//
// What the gateway sends a Lambda target (Amazon Bedrock AgentCore developer guide, "Lambda function input
// format"): the tool's arguments as the event, flat, no envelope; the tool's name in the invocation's client
// context, `custom.bedrockAgentCoreToolName`, prefixed by the target's name and `___`. The gateway sends a
// Lambda target no token and no claim, so the request interceptor — which sees the request's headers
// (`passRequestHeaders`) — verifies the bearer token and writes the caller into the arguments under
// `CALLER_FIELD`, over anything the agent sent there.
import type { Context } from 'aws-lambda';

/** The argument the request interceptor writes the verified caller into: `{ tenant, user }`. */
export const CALLER_FIELD = '_retrysafe_caller';

/** What separates the target's name from the tool's in the tool name the gateway lists and sends. */
export const TARGET_SEPARATOR = '___';

/** What the interceptor writes under `CALLER_FIELD`: the token's tenant claim and its `sub`. */
export interface GatewayCaller {
  readonly tenant: string;
  readonly user: string;
}

/**
 * The tool name an AgentCore Gateway invocation names in its client context (with its target's prefix),
 * or undefined when the invocation is not the gateway's: API Gateway's carries no client context.
 */
export function gatewayInvocationTool(context: Pick<Context, 'clientContext'> | undefined): string | undefined {
  return (context?.clientContext as { custom?: { bedrockAgentCoreToolName?: string } } | undefined)?.custom
    ?.bedrockAgentCoreToolName;
}

/** What a gateway call without a caller is told: nothing was run. */
export const NO_CALLER = "_retrysafe_caller: missing (the gateway's interceptor sets it from the token); nothing ran";
