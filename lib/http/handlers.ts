import { createHash } from 'node:crypto';
import type { Logger } from '@aws-lambda-powertools/logger';
import type { Context } from 'aws-lambda';
import type { z } from 'zod';
import type { InvoiceStore } from '../domain/invoices';
import type { TicketStore } from '../domain/tickets';
import { IDEMPOTENCY_KEY_FIELD } from '../idempotency/arguments';
import type { ToolRuntime } from '../idempotency/runtime';
import type { ToolDefinition } from '../idempotency/tool';
import type { JsonObject, ToolResult } from '../idempotency/types';
import { describeTool } from '../tools/catalog';
import { type ApiEvent, bodyText, header, identityFromEvent, MAX_BODY_BYTES, pathParameter } from './event';
import { errorResponse, type HttpResponse, json, toHttpResponse } from './status';

type Deadline = Pick<Context, 'getRemainingTimeInMillis'>;
const UNAUTHORIZED = 'authorization: a valid bearer token with a tenant and a subject is required';

/** A client key as it may be logged: a short hash, never the key itself. */
export function keyHash(key: string): string {
  return createHash('sha256').update(key).digest('hex').slice(0, 16);
}

function outcomeOf(result: ToolResult): string {
  if (result.ok) return result.idempotent ? 'replayed' : 'executed';
  return 'status' in result ? 'pending' : result.error.code;
}

/**
 * The key from the `Idempotency-Key` header, if sent. The IETF draft sends it as a structured-field
 * string (`"abc"`); Stripe-style clients send it bare. Both are accepted.
 */
function headerKey(event: ApiEvent): string | undefined {
  const value = header(event, 'idempotency-key');
  if (value === undefined) return undefined;
  const quoted = /^"(.*)"$/.exec(value);
  return quoted ? quoted[1] : value;
}

/**
 * `POST /tools/{tool}`: the body is the tool's arguments, flat, with `idempotency_key` (or the
 * `Idempotency-Key` header). Everything besides parsing is the runtime's.
 */
export async function handleToolWrite<S extends z.ZodObject, R extends JsonObject>(
  runtime: ToolRuntime,
  tool: ToolDefinition<S, R>,
  event: ApiEvent,
  deadline: Deadline,
  logger?: Logger,
): Promise<HttpResponse> {
  const identity = identityFromEvent(event);
  if (!identity) return errorResponse('unauthorized', UNAUTHORIZED);
  const text = bodyText(event);
  if (Buffer.byteLength(text, 'utf8') > MAX_BODY_BYTES) {
    return errorResponse('payload_too_large', `body: larger than ${MAX_BODY_BYTES} bytes`);
  }
  let input: unknown;
  try {
    input = JSON.parse(text);
  } catch {
    return errorResponse('invalid_args', 'body: not valid JSON');
  }
  const fromHeader = headerKey(event);
  if (fromHeader !== undefined && input !== null && typeof input === 'object' && !Array.isArray(input)) {
    const fromBody = (input as Record<string, unknown>)[IDEMPOTENCY_KEY_FIELD];
    if (fromBody !== undefined && fromBody !== fromHeader) {
      return errorResponse('invalid_args', `${IDEMPOTENCY_KEY_FIELD}: the body and the Idempotency-Key header differ`);
    }
    input = { ...input, [IDEMPOTENCY_KEY_FIELD]: fromHeader };
  }

  const result = await runtime.invoke(tool, identity, input, deadline);
  const key = result.ok || 'status' in result ? result.key : undefined;
  logger?.info('tool call', {
    tool: tool.name,
    tenant: identity.tenant,
    outcome: outcomeOf(result),
    idempotent: result.ok ? result.idempotent : undefined,
    key_hash: key === undefined ? undefined : keyHash(key),
  });
  return toHttpResponse(result);
}

/** `GET /tools`: every tool's name, description, JSON Schema and MCP-style annotations. */
export function handleListTools(tools: Record<string, ToolDefinition>, event: ApiEvent): HttpResponse {
  if (!identityFromEvent(event)) return errorResponse('unauthorized', UNAUTHORIZED);
  return json(200, { tools: Object.values(tools).map(describeTool) });
}

/** `GET /tools/{tool}/operations/{key}`: the caller's own record of a client key. */
export async function handleGetOperation(
  runtime: ToolRuntime,
  tools: Record<string, ToolDefinition>,
  event: ApiEvent,
): Promise<HttpResponse> {
  const identity = identityFromEvent(event);
  if (!identity) return errorResponse('unauthorized', UNAUTHORIZED);
  const name = pathParameter(event, 'tool');
  const key = pathParameter(event, 'key');
  const tool = name === undefined ? undefined : tools[name];
  if (!tool) return errorResponse('not_found', `tool: no tool ${name ?? ''}`);
  if (!key) return errorResponse('not_found', 'key: no operation');
  try {
    const operation = await runtime.lookup(tool, identity, key);
    if (!operation) return errorResponse('not_found', `key: no operation ${key} for ${tool.name}`);
    return json(200, {
      ok: true,
      status: operation.status,
      key,
      ...(operation.status === 'completed' ? { receipt: operation.receipt } : {}),
    });
  } catch {
    return errorResponse('unavailable', 'the idempotency store is unavailable; retry later');
  }
}

/** `GET /invoices/{invoice_id}`: the caller's tenant's invoice, with its refund receipt or null. */
export async function handleGetInvoice(invoices: InvoiceStore, event: ApiEvent): Promise<HttpResponse> {
  const identity = identityFromEvent(event);
  if (!identity) return errorResponse('unauthorized', UNAUTHORIZED);
  const id = pathParameter(event, 'invoice_id');
  const invoice = id ? await invoices.get(identity.tenant, id) : undefined;
  if (!invoice) return errorResponse('not_found', `invoice_id: no invoice ${id ?? ''}`);
  const { tenant: _tenant, refund, ...fields } = invoice;
  return json(200, { ok: true, invoice: { ...fields, refunded: refund !== undefined, refund: refund ?? null } });
}

/** `GET /tickets/{ticket_key}`: the caller's tenant's ticket. */
export async function handleGetTicket(tickets: TicketStore, event: ApiEvent): Promise<HttpResponse> {
  const identity = identityFromEvent(event);
  if (!identity) return errorResponse('unauthorized', UNAUTHORIZED);
  const key = pathParameter(event, 'ticket_key');
  const ticket = key ? await tickets.get(identity.tenant, key) : undefined;
  if (!ticket) return errorResponse('not_found', `ticket_key: no ticket ${key ?? ''}`);
  const { tenant: _tenant, ...fields } = ticket;
  return json(200, { ok: true, ticket: fields });
}
