// The AgentCore Gateway's REQUEST interceptor: the one place a call through the gateway gets its caller.
//
// The gateway checks the bearer token (its CUSTOM_JWT authorizer: the issuer's discovery URL, the
// audience) and then calls this function with the MCP request — and, with `passRequestHeaders`, the
// request's headers (Amazon Bedrock AgentCore developer guide, "Using interceptors with Gateway":
// input `mcp.gatewayRequest.{headers, body}`, output `mcp.transformedGatewayRequest` to go on, or
// `mcp.transformedGatewayResponse` to answer the client without calling the target). A Lambda target gets
// the tool's arguments alone, no header and no claim: so on a `tools/call` this function verifies the
// token again (the issuer's JWKS, as the MCP function does), and writes its tenant and user into the
// arguments under `CALLER_FIELD` — over whatever the agent sent there — signed for the tool the call names
// (`callerMac`, with the key `RETRYSAFE_CALLER_KEY_SECRET` names): the tool's function takes no caller it
// cannot verify, so a caller the agent wrote itself runs nothing. A call whose token names no caller is
// answered here, a tool error in the tools' own answer shape; the target never runs.

import type { HttpErrorCode } from '../api/status';
import {
  identityFromTokenClaims,
  noCallerRefusal,
  type TokenVerifier,
  tokenRefusal,
  VerifierUnavailableError,
} from '../auth/token-claims';
import { errorResponse } from '../http/status';
import { CALLER_FIELD, callerMac, type GatewayCaller, SIGNED_CALLER_TTL_SECONDS, type SignedCaller } from './caller';
import type { CallerKey } from './caller-key';

/** What the gateway hands a REQUEST interceptor (the fields read here). */
export interface InterceptorInput {
  readonly interceptorInputVersion?: string;
  readonly mcp?: {
    readonly gatewayRequest?: {
      readonly path?: string;
      readonly httpMethod?: string;
      /** Present when the interceptor is configured with `passRequestHeaders: true`. */
      readonly headers?: Readonly<Record<string, string>>;
      /** The MCP JSON-RPC request. */
      readonly body?: unknown;
    };
  };
}

/** A JSON-RPC request, as far as this function reads it. */
interface McpRequest {
  readonly jsonrpc?: string;
  readonly id?: string | number | null;
  readonly method?: string;
  readonly params?: { readonly name?: string; readonly arguments?: unknown; readonly [key: string]: unknown };
  readonly [key: string]: unknown;
}

/** What the interceptor answers the gateway: the request to go on with, or the answer to the client. */
export type InterceptorOutput = {
  readonly interceptorOutputVersion: '1.0';
  readonly mcp:
    | { readonly transformedGatewayRequest: { readonly body: unknown } }
    | { readonly transformedGatewayResponse: { readonly statusCode: number; readonly body: unknown } };
};

export interface InterceptorDependencies {
  /** Verifies the bearer token: the issuer's JWKS, issuer and audience (`createJwksVerifier`). */
  readonly verifyToken: TokenVerifier;
  /** The key callers are signed with, the one the gateway's functions check them with (`callerKeyFromEnv`). */
  readonly callerKey: CallerKey;
  /** Where the tenant claim's name is read (`TENANT_CLAIM`). @default process.env */
  readonly env?: NodeJS.ProcessEnv;
  /** The clock a signature's expiry is counted from. @default Date.now */
  readonly nowMs?: () => number;
}

/** `caller` signed with `key` for the tool named `tool`, accepted for `SIGNED_CALLER_TTL_SECONDS` from `nowMs`. */
export function signCaller(key: string, { tenant, user }: GatewayCaller, tool: string, nowMs: number): SignedCaller {
  const expiresAtS = Math.floor(nowMs / 1000) + SIGNED_CALLER_TTL_SECONDS;
  return { tenant, user, tool, expiresAtS, mac: callerMac(key, tenant, user, tool, expiresAtS) };
}

const OUTPUT_VERSION = '1.0';

/** The bearer token of the request's `Authorization` header, whatever its name's case. */
function bearerToken(headers: Readonly<Record<string, string>> | undefined): string | undefined {
  for (const [name, value] of Object.entries(headers ?? {})) {
    if (name.toLowerCase() !== 'authorization' || typeof value !== 'string') continue;
    const match = /^Bearer\s+(\S+)$/i.exec(value.trim());
    return match?.[1];
  }
  return undefined;
}

/** The Gateway's answer to the client, in place of the target's: `body` is the JSON-RPC message it sends. */
function gatewayAnswer(body: Record<string, unknown>): InterceptorOutput {
  return {
    interceptorOutputVersion: OUTPUT_VERSION,
    mcp: { transformedGatewayResponse: { statusCode: 200, body: { jsonrpc: '2.0', ...body } } },
  };
}

/**
 * The client's answer to a `tools/call` refused here: a tool result with `isError`, its text the tools'
 * own error answer (`{ ok: false, error: { code, message }, next }`, as every transport answers it).
 */
function refused(request: McpRequest, code: HttpErrorCode, message: string, retryAfterMs?: number): InterceptorOutput {
  const answer = errorResponse(code, message, retryAfterMs).body;
  return gatewayAnswer({
    id: request.id ?? null,
    result: { isError: true, content: [{ type: 'text', text: answer }], structuredContent: JSON.parse(answer) },
  });
}

/** The caller a `tools/call`'s token names, or why there is none (the code and message to refuse with). */
async function callerOfToken(
  headers: Readonly<Record<string, string>> | undefined,
  { verifyToken, env = process.env }: InterceptorDependencies,
): Promise<GatewayCaller | { readonly code: HttpErrorCode; readonly message: string; readonly retryAfterMs?: number }> {
  const token = bearerToken(headers);
  if (token === undefined) {
    return {
      code: 'unauthorized',
      message:
        'authorization: no bearer token reached the interceptor (its passRequestHeaders must be true); nothing ran',
    };
  }
  let claims: Record<string, string>;
  try {
    claims = await verifyToken(token);
  } catch (error) {
    if (error instanceof VerifierUnavailableError) {
      // The verifier's own wait, as the MCP function answers it (lib/mcp/http.ts, `verifierUnavailable`).
      return {
        code: 'unavailable',
        message: `authorization: ${error.message}; retry later`,
        retryAfterMs: error.retryAfterSeconds * 1000,
      };
    }
    return { code: 'unauthorized', message: `authorization: ${tokenRefusal(error)}` };
  }
  const identity = identityFromTokenClaims(claims, env);
  return identity ?? { code: 'unauthorized', message: `authorization: ${noCallerRefusal(env)}` };
}

/** JSON-RPC's error codes for a request that cannot be read (JSON-RPC 2.0, §5.1). */
const PARSE_ERROR = -32700;
const INVALID_REQUEST = -32600;
const INVALID_PARAMS = -32602;

/**
 * The client's answer to a request this function cannot sign and so does not let through: a JSON-RPC
 * error, as the protocol answers a request it cannot read (the target never runs).
 */
function unreadable(id: unknown, code: number, message: string): InterceptorOutput {
  return gatewayAnswer({
    id: typeof id === 'string' || typeof id === 'number' ? id : null,
    error: { code, message: `${message}; nothing ran` },
  });
}

/** The request a body holds: one JSON-RPC request object (its text parsed), or undefined for anything else. */
function oneRequest(body: unknown): McpRequest | undefined {
  let parsed = body;
  if (typeof body === 'string') {
    try {
      parsed = JSON.parse(body);
    } catch {
      return undefined;
    }
  }
  return parsed !== null && typeof parsed === 'object' && !Array.isArray(parsed) ? (parsed as McpRequest) : undefined;
}

/**
 * One REQUEST interception. A `tools/call` goes on with `CALLER_FIELD` set from the verified token (its
 * other arguments untouched), or is answered here; every other request (`initialize`, `tools/list`, …)
 * goes on unchanged.
 *
 * Fails closed: a request that could reach a target and that this function cannot sign is answered here
 * with a JSON-RPC error, never passed through with the agent's arguments as they came — a batch (an array:
 * its calls are not read one by one), a body that is not one JSON-RPC request object, a `tools/call` whose
 * `params.name` is not a string naming a tool (no signature can name the tool it is for).
 */
export async function interceptRequest(
  input: InterceptorInput,
  dependencies: InterceptorDependencies,
): Promise<InterceptorOutput> {
  const gatewayRequest = input?.mcp?.gatewayRequest;
  const body = gatewayRequest?.body;
  if (Array.isArray(body))
    return unreadable(null, INVALID_REQUEST, 'a JSON-RPC batch is not accepted: send one request');
  const request = oneRequest(body);
  if (!request) return unreadable(null, PARSE_ERROR, 'the body is not one JSON-RPC request object');
  if (request.method !== 'tools/call') {
    return { interceptorOutputVersion: OUTPUT_VERSION, mcp: { transformedGatewayRequest: { body } } };
  }
  const name = request.params?.name;
  if (typeof name !== 'string' || name === '') {
    return unreadable(request.id, INVALID_PARAMS, 'params.name: a tools/call names its tool with a string');
  }
  const caller = await callerOfToken(gatewayRequest?.headers, dependencies);
  if ('code' in caller) return refused(request, caller.code, caller.message, caller.retryAfterMs);
  const given = request.params?.arguments;
  const args = given !== null && typeof given === 'object' && !Array.isArray(given) ? given : {};
  const { callerKey, nowMs = Date.now } = dependencies;
  const signed = signCaller(await callerKey(), caller, name, nowMs());
  return {
    interceptorOutputVersion: OUTPUT_VERSION,
    mcp: {
      transformedGatewayRequest: {
        body: {
          ...request,
          params: {
            ...request.params,
            arguments: { ...args, [CALLER_FIELD]: signed },
          },
        },
      },
    },
  };
}

/** The interceptor's Lambda handler. */
export function agentCoreInterceptor(
  dependencies: InterceptorDependencies,
): (input: InterceptorInput) => Promise<InterceptorOutput> {
  return function intercept(input) {
    return interceptRequest(input, dependencies);
  };
}
