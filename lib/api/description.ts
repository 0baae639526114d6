// A tool as agents see it, as plain types: what the client's declarations need of the listing, without
// zod or the server's code (the client's types stand alone).
import type { JsonObject } from '../idempotency/types';

/** What protects a tool from running twice, as agents and operators are told. */
export interface KeyKinds {
  /** `idempotency_key` is required on every call. */
  readonly client_key: true;
  /** How long a client key's receipt is kept. */
  readonly client_key_ttl_seconds: number;
  /** The argument fields that allow one effect whatever the key (refund → invoice_id), or null. */
  readonly natural_key: readonly string[] | null;
  /** Identical arguments from the same caller within this many seconds are one intent, or null. */
  readonly dedupe_window_seconds: number | null;
}

/** A tool as agents see it (`GET /tools`, the MCP listing). */
export interface ToolDescription {
  readonly name: string;
  readonly description: string;
  readonly input_schema: JsonObject;
  /** The answer object every call returns (the HTTP body, MCP `structuredContent`), with the receipt's schema. */
  readonly output_schema: JsonObject;
  readonly annotations: {
    readonly readOnlyHint: false;
    readonly destructiveHint: boolean;
    readonly idempotentHint: true;
    readonly openWorldHint: boolean;
  };
  readonly idempotency: KeyKinds;
}
