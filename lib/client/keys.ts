/**
 * What the server accepts as a client key: 1–255 printable ASCII characters (0x20–0x7E). The same rule
 * as the server's `clientKeySchema`, restated so the client loads none of the server's code; a unit
 * test holds the two together.
 */
const CLIENT_KEY = /^[\x20-\x7E]{1,255}$/;

/** Whether the server would accept `key` as an idempotency key. */
export function isValidKey(key: unknown): key is string {
  return typeof key === 'string' && CLIENT_KEY.test(key);
}

/**
 * The idempotency key for an agent framework's tool call: the tool-call id itself when it is a valid
 * key (OpenAI `call_…`, Anthropic `toolu_…` and AI SDK ids are), else `tc_` + its SHA-256 in hex. Either
 * way the same id always gives the same key, so every retry of the tool call is the same intent.
 *
 * The id must be unique per intent: a framework that numbers tool calls per turn (`0`, `1`, …) would
 * make two intents share a key; pass an explicit `key` for such frameworks.
 */
export async function keyForToolCall(toolCallId: string): Promise<string> {
  if (typeof toolCallId !== 'string' || toolCallId.length === 0) {
    throw new TypeError('toolCallId: must be a non-empty string');
  }
  if (isValidKey(toolCallId)) return toolCallId;
  // Web Crypto, not node:crypto: the client also runs where only the web platform is (edge runtimes).
  const digest = await globalThis.crypto.subtle.digest('SHA-256', new TextEncoder().encode(toolCallId));
  const hex = Array.from(new Uint8Array(digest), function byteHex(byte) {
    return byte.toString(16).padStart(2, '0');
  }).join('');
  return `tc_${hex}`;
}

/** A fresh key for an intent that came with none: a random UUID, minted once and reused on every retry. */
export function mintKey(): string {
  return globalThis.crypto.randomUUID();
}
