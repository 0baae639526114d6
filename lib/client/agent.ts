import type { ToolDescription } from '../api/description';
import { type NextStep, nextAfterError, nextAfterWrite, runsAnewStep } from '../api/next-step';
import { GaveUpError, MayRunAnewError, ToolCallError } from './errors';
import { isValidKey, keyForToolCall } from './keys';
import type { AnswerErrorCode, CallOptions, Completed, JsonObject } from './types';

const IDEMPOTENCY_KEY_FIELD = 'idempotency_key';

/** How long a model should wait before resuming a call the client gave up on. */
const GAVE_UP_RETRY_AFTER_MS = 5000;

/**
 * What a tool call answers the model: the receipt, or an error it can act on — fix the arguments
 * (`invalid_args`), pick another object (`not_found`), or, after `gave_up`, call again later with the
 * `key` the answer names; after `runs_anew` (a Powertools handler holds the call), first check whether it
 * acted. Never an exception for what the server decided. Every answer says what to do
 * next as data (`next`), as the server does: a model shown only the object still knows.
 */
export type AgentAnswer<R = JsonObject> =
  | (Completed<R> & { readonly next: NextStep })
  | {
      readonly ok: false;
      /** The intent's key: pass it as `idempotency_key` to retry this intent rather than start another. */
      readonly key: string;
      readonly error: { readonly code: AnswerErrorCode | 'gave_up' | 'runs_anew'; readonly message: string };
      readonly next: NextStep;
    };

/** What the adapters need of a client: its untyped `call`. Any `RetrysafeClient` is one. */
export interface ToolCaller {
  call(tool: string, args: JsonObject, options: CallOptions): Promise<Completed>;
}

/** A model's tool call, whatever the framework calls its parts. */
export interface ModelToolCall {
  /** The tool's name. */
  readonly tool: string;
  /** The arguments the model produced: an object, or the JSON text of one (OpenAI sends text). */
  readonly input: unknown;
  /** The framework's id of this tool call: the intent's key unless the model passed `idempotency_key`. */
  readonly toolCallId: string;
  readonly signal?: AbortSignal;
}

/** A status the API never sends (a proxy's 407, say): calling again as is fails the same way. */
const AFTER_HTTP_ERROR: NextStep = {
  action: 'stop',
  message: 'Nothing was done: something between the agent and the API refused the call.',
};

function refusal(key: string, code: AnswerErrorCode, message: string): AgentAnswer<never> {
  return {
    ok: false,
    key,
    error: { code, message },
    next: code === 'http_error' ? AFTER_HTTP_ERROR : nextAfterError(code),
  };
}

/**
 * Runs a model's tool call through the client and answers what the model should see. The intent's key
 * is the `idempotency_key` the model passed — so a model told `gave_up` can resume the same intent —
 * else the one derived from the tool-call id, so a framework that runs the same tool call twice
 * (a retried step, a resumed stream) causes one effect. Errors the server decided become answers; a
 * broken client setup (`UnexpectedAnswerError`, a bad token getter) is thrown.
 */
export async function answerToolCall(client: ToolCaller, call: ModelToolCall): Promise<AgentAnswer> {
  const fallbackKey = await keyForToolCall(call.toolCallId);
  let input = call.input;
  if (typeof input === 'string') {
    try {
      input = JSON.parse(input === '' ? '{}' : input);
    } catch {
      return refusal(fallbackKey, 'invalid_args', 'arguments: not valid JSON');
    }
  }
  if (typeof input !== 'object' || input === null || Array.isArray(input)) {
    return refusal(fallbackKey, 'invalid_args', 'arguments: expected a JSON object');
  }
  const { [IDEMPOTENCY_KEY_FIELD]: modelKey, ...args } = input as JsonObject;
  // A strict-mode model fills every field: `null` is a key left out.
  if (modelKey !== undefined && modelKey !== null && !isValidKey(modelKey)) {
    return refusal(fallbackKey, 'invalid_args', `${IDEMPOTENCY_KEY_FIELD}: must be 1-255 printable ASCII characters`);
  }
  const key = isValidKey(modelKey) ? modelKey : fallbackKey;
  try {
    const done = await client.call(call.tool, args, { key, signal: call.signal });
    return { ...done, next: nextAfterWrite(call.tool, done) };
  } catch (error) {
    if (error instanceof ToolCallError) return refusal(key, error.code, error.detail);
    if (error instanceof GaveUpError) {
      // Never sooner than the server said the call can next change (a provider's wait, the completer's re-run).
      const afterMs = Math.max(GAVE_UP_RETRY_AFTER_MS, error.retryAfterMs ?? 0);
      const message = `No final answer yet (last: ${error.last}); the call may still complete. After ${afterMs} ms, call ${call.tool} again with idempotency_key "${key}" and the same arguments: it will not run twice.`;
      return {
        ok: false,
        key,
        error: { code: 'gave_up', message },
        next: { action: 'call_again', after_ms: afterMs, message },
      };
    }
    if (error instanceof MayRunAnewError) {
      // What the server decided (a Powertools handler holds the call): its step, as its own answers give it —
      // the model checks whether it acted before it calls again (review 5, F3).
      // Named with its key, as gave_up's is: the model's next tool call would otherwise carry a new key, a new
      // call that runs at once while the handler may have acted (review 6).
      const step = runsAnewStep(error.retryAfterMs ?? GAVE_UP_RETRY_AFTER_MS);
      const message = `${step.message} To ask again, call ${call.tool} with idempotency_key "${key}" and the same arguments: a new key is a new call.`;
      return { ok: false, key, error: { code: 'runs_anew', message }, next: { ...step, message } };
    }
    throw error;
  }
}

/**
 * A tool's input schema as a model should see it: the listed JSON Schema with `idempotency_key`
 * optional, because the adapter derives the key from the tool-call id, and a model asked to invent
 * keys mints a new one on every retry. The model passes one only to resume an intent an earlier
 * answer named. `$schema` is left out: some providers refuse a dialect line in a tool's parameters.
 */
export function modelInputSchema(tool: ToolDescription): JsonObject {
  const { $schema: _dialect, required, properties, ...rest } = tool.input_schema;
  const fields = (properties ?? {}) as Record<string, JsonObject>;
  return {
    ...rest,
    properties: {
      ...fields,
      [IDEMPOTENCY_KEY_FIELD]: {
        ...fields[IDEMPOTENCY_KEY_FIELD],
        description:
          'Leave out (or null): the key is derived from this tool call. Only to resume a call whose answer said gave_up, pass the key that answer named.',
      },
    },
    required: (Array.isArray(required) ? required : []).filter(function notTheKey(field) {
      return field !== IDEMPOTENCY_KEY_FIELD;
    }),
  };
}
