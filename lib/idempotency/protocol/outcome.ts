/**
 * The `data` attribute of a completed call record, in one place: the stored outcome, the one decoder that
 * tells it from anything else (`decodeOutcome`, also what `powertoolsResponseHook` reads), and the receipt
 * as stored (`receiptTextOf`). Part of `record.ts`, the home of what is on disk, which re-exports it.
 * Plain data and functions only (no SDK).
 */
import canonicalize from 'canonicalize';
import type { ErrorCode } from '../errors';

/**
 * The outcome a completed record holds (its `data` attribute): strings, a boolean and an optional
 * failure only.
 */
export interface StoredOutcome {
  /** The receipt as canonical JSON text; absent when the outcome is a failure. */
  readonly receipt?: string;
  /**
   * True when this call did not commit the effect itself: another call had (a natural key's earlier
   * refund, a dedupe window's holder, a commit made by another key). Exactly one stored outcome per
   * effect says false: the one that committed it.
   */
  readonly replayed: boolean;
  /**
   * The call's outcome is a failure, stored so that every retry gets the same answer instead of a
   * second run: `internal` for a receipt that cannot be stored after the effect ran; a business error
   * raised by a later attempt (the first may have made the effect, so the claim is not released).
   */
  readonly failure?: ErrorCode;
  /** The failure's message, when it may be shown. */
  readonly message?: string;
}

/** The error codes a stored failure may name: every `ErrorCode` (the compiler holds the list to the type). */
const CODES: Readonly<Record<ErrorCode, 1>> = {
  invalid_args: 1,
  not_found: 1,
  conflict: 1,
  unavailable: 1,
  internal: 1,
};

/**
 * retrysafe's stored outcome, told exactly from anything else (docs/design.md, "Powertools and retrysafe on
 * one table"): the keys are exactly `{ receipt, replayed }`, `receipt` the JSON text of a plain object, or
 * exactly `{ replayed, failure, message? }`, `failure` a known error code — what `store` writes and nothing
 * more. Anything else (none, or a Powertools handler's own result, however close its shape) is undefined:
 * the one rule by which both sides — `callRecordOf` and `powertoolsResponseHook` — tell an outcome from a
 * result, so the same record answers the same on both.
 */
export function decodeOutcome(data: unknown): StoredOutcome | undefined {
  if (typeof data !== 'object' || !data) return undefined;
  const { receipt, replayed, failure, message, ...rest } = data as Record<string, unknown>;
  if (typeof replayed !== 'boolean' || Object.keys(rest).length > 0) return undefined;
  const outcome =
    receipt === undefined
      ? Object.hasOwn(CODES, failure as string) && (message === undefined || typeof message === 'string')
      : failure === undefined && message === undefined && typeof receipt === 'string' && isObjectText(receipt);
  return outcome ? (data as StoredOutcome) : undefined;
}

/** Whether `text` is the JSON text of a plain object, as `receiptTextOf` stores a receipt. */
function isObjectText(text: string): boolean {
  try {
    // An object's prototype: not an array's, a string's or a number's (and `null` has none: it throws).
    return Object.getPrototypeOf(JSON.parse(text)) === Object.prototype;
  } catch {
    return false;
  }
}

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
 * A receipt as a call record stores it (`data`'s `receipt`): the canonical JSON text (RFC 8785, the same
 * bytes from every store) of a plain JSON object of at most {@link MAX_RECEIPT_BYTES}, or why it is not one
 * (`refused`, the words after "a receipt"). Never throws: a tool's receipt refused is its `internal` error
 * (`encodeReceipt`), a Powertools handler's result refused an `internal` outcome (`powertoolsOutcomeOf`).
 */
export function receiptTextOf(receipt: unknown): { readonly text: string } | { readonly refused: string } {
  if (receipt === null || typeof receipt !== 'object' || Array.isArray(receipt)) {
    return { refused: 'that is not a JSON object' };
  }
  const offending = firstNonJson(receipt, '$');
  if (offending) return { refused: `that is not plain JSON at ${offending}` };
  const text = canonicalize(receipt) as string;
  const bytes = Buffer.byteLength(text, 'utf8');
  if (bytes > MAX_RECEIPT_BYTES) return { refused: `of ${bytes} bytes; the limit is ${MAX_RECEIPT_BYTES}` };
  return { text };
}
