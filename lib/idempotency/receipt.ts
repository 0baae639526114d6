import canonicalize from 'canonicalize';
import { InternalError } from './errors';
import type { JsonObject } from './types';

/** Largest receipt stored, as UTF-8 JSON text: far under DynamoDB's 400 KB item limit. */
export const MAX_RECEIPT_BYTES = 32 * 1024;

/** Where `value` stops being plain JSON, as a JSONPath-like location, or undefined when it is plain JSON. */
function firstNonJson(value: unknown, path: string): string | undefined {
  if (value === null || typeof value === 'string' || typeof value === 'boolean') return undefined;
  if (typeof value === 'number') return Number.isFinite(value) ? undefined : `${path} (${value})`;
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const found = firstNonJson(value[i], `${path}[${i}]`);
      if (found) return found;
    }
    return undefined;
  }
  if (typeof value === 'object') {
    const proto = Object.getPrototypeOf(value);
    if (proto !== Object.prototype && proto !== null) return `${path} (${proto?.constructor?.name ?? 'object'})`;
    for (const [key, child] of Object.entries(value)) {
      const found = firstNonJson(child, `${path}.${key}`);
      if (found) return found;
    }
    return undefined;
  }
  return `${path} (${typeof value})`;
}

/**
 * Checks that a tool's receipt is a plain JSON object within {@link MAX_RECEIPT_BYTES} and returns its
 * canonical JSON text (RFC 8785), which is what gets stored. Storing text (not a DynamoDB map) means the store can never
 * refuse a receipt after the side effect ran: a refused result would leave the claim INPROGRESS and
 * the work would run again once the lock expired. A receipt that breaks the rule is a bug in the tool:
 * it throws `internal` *before* anything is stored, and the call's outcome is stored as that `internal`
 * failure (its effect ran: the retry gets the same answer, never a second run).
 */
export function encodeReceipt(tool: string, receipt: unknown): string {
  if (receipt === null || typeof receipt !== 'object' || Array.isArray(receipt)) {
    throw new InternalError(`tool ${tool} returned a receipt that is not a JSON object`);
  }
  const offending = firstNonJson(receipt, '$');
  if (offending) throw new InternalError(`tool ${tool} returned a receipt that is not plain JSON at ${offending}`);
  // Canonical text: every answer for one receipt is byte-identical, whichever store it was read from.
  const text = canonicalize(receipt) as string;
  const bytes = Buffer.byteLength(text, 'utf8');
  if (bytes > MAX_RECEIPT_BYTES) {
    throw new InternalError(`tool ${tool} returned a receipt of ${bytes} bytes; the limit is ${MAX_RECEIPT_BYTES}`);
  }
  return text;
}

/** The receipt back from its stored text. */
export function decodeReceipt<R extends JsonObject>(text: string): R {
  return JSON.parse(text) as R;
}
