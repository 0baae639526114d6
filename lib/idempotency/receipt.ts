import { InternalError } from './errors';
import { receiptTextOf } from './protocol/record';
import type { JsonObject } from './types';

export { MAX_RECEIPT_BYTES } from './protocol/record';

/**
 * Checks that a tool's receipt is a plain JSON object within {@link MAX_RECEIPT_BYTES} and returns its
 * canonical JSON text (RFC 8785), which is what gets stored (`receiptTextOf`). Storing text (not a DynamoDB map) means the store can never
 * refuse a receipt after the side effect ran: a refused result would leave the claim INPROGRESS and
 * the work would run again once the lock expired. A receipt that breaks the rule is a bug in the tool:
 * it throws `internal` *before* anything is stored, and the call's outcome is stored as that `internal`
 * failure (its effect ran: the retry gets the same answer, never a second run).
 */
export function encodeReceipt(tool: string, receipt: unknown): string {
  const stored = receiptTextOf(receipt);
  if ('refused' in stored) throw new InternalError(`tool ${tool} returned a receipt ${stored.refused}`);
  return stored.text;
}

/** The receipt back from its stored text. */
export function decodeReceipt<R extends JsonObject>(text: string): R {
  return JSON.parse(text) as R;
}
