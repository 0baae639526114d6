import * as z from 'zod/mini';
import { errorAnswer, nextStepSchema } from '../tools/catalog';

// The reads' answers, as schemas: one source for MCP's `outputSchema` and the OpenAPI document. Every field
// is named (stored attributes a later version adds may appear: the records are loose objects). Each is built
// on first use (`z.lazy`): only a listing or the document reads them, never a call, and building them when
// the module loads was part of the MCP function's cold start.

/** `get_operation` / `GET /tools/{tool}/operations/{key}`: the caller's own record of a client key. */
export const operationAnswer = z.lazy(() =>
  z.union([
    z.strictObject({
      ok: z.literal(true),
      status: z.literal('completed'),
      key: z.string(),
      receipt: z.record(z.string(), z.unknown()).check(z.describe("The write's receipt, as it first answered.")),
      next: nextStepSchema,
    }),
    z.strictObject({
      ok: z.literal(true),
      status: z.literal('pending'),
      key: z.string(),
      retry_after_ms: z.int().check(z.describe('Ask again after this long (ms): it may finish at any moment.')),
      runs_anew: z.optional(
        z
          .literal(true)
          .check(
            z.describe(
              'A Powertools handler on the same table holds this call, not retrysafe: once its record expires a call with the same key runs it anew, which can act twice. Check the effect first.',
            ),
          ),
      ),
      hint: z.optional(z.string().check(z.describe('What holds it, and what a resend would do.'))),
      next: nextStepSchema,
    }),
    z.strictObject({
      ok: z.literal(true),
      status: z.literal('abandoned'),
      key: z.string(),
      retry_after_ms: z
        .int()
        .check(
          z.describe(
            'When the server re-runs it (ms from now), or gives up on it if gives_up says so; a resend with the same key runs it at once.',
          ),
        ),
      hint: z.string().check(z.describe('What happens next: the completer finishes it, or resend with the same key.')),
      gives_up: z.optional(
        z
          .enum(['attempts', 'expiring'])
          .check(
            z.describe(
              'At retry_after_ms the server stops retrying it (stalled) instead of re-running it: its attempts are used up, or its record expires before the server could re-run it. A resend with the same key runs it.',
            ),
          ),
      ),
      queued: z.optional(
        z
          .literal(true)
          .check(
            z.describe(
              'None of its attempts has run yet (handed to the server to run in the background, or waiting for an identical call): nothing happened.',
            ),
          ),
      ),
      next: nextStepSchema,
    }),
    z.strictObject({
      ok: z.literal(true),
      status: z.literal('stalled'),
      key: z.string(),
      retry_after_ms: z.optional(
        z.int().check(z.describe('Nothing changes it before then (ms); after, a resend can act twice.')),
      ),
      runs_anew: z.optional(
        z
          .literal(true)
          .check(
            z.describe(
              'No attempt can run this call before its record expires (a Powertools handler started it, or too little time is left): once it expires a call with the same key runs it anew, which can act twice. Check the effect first.',
            ),
          ),
      ),
      hint: z
        .string()
        .check(z.describe('The completer gave up on it: only a resend with the same key and arguments finishes it.')),
      next: nextStepSchema,
    }),
  ]),
);

/**
 * An app's read's answer (`defineReadModule`): `ok`, what it found, and its next step — the same shape
 * every read answers over REST and MCP.
 */
export function foundAnswer(found: z.ZodMiniObject): z.ZodMiniObject {
  return z.strictObject({ ok: z.literal(true), ...found.def.shape, next: nextStepSchema });
}

/** A read's error: its refusal, or for `get_operation` the call's stored failure (any code a write ends with). */
export const readErrorAnswer = z.lazy(() =>
  errorAnswer(['invalid_args', 'not_found', 'conflict', 'unavailable', 'internal']),
);
