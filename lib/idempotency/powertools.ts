/**
 * `retrysafe/idempotency/powertools`: what Powertools' own handler (`makeIdempotent` on
 * `DynamoDBPersistenceLayer`) needs to serve a table retrysafe writes too — the arguments' fingerprint its
 * validation hash is taken of, and the response hook with which its replay of a record retrysafe stored
 * answers what retrysafe would. A light subpath (no zod, no runtime: ~2 KB bundled), for a function that
 * runs Powertools, not retrysafe. Reading records Powertools' handler wrote is `protocol/record.ts`'s
 * (`callRecordOf`); the configuration both sides share is docs/design.md, "Powertools and retrysafe on one
 * table".
 */
import { failureOf } from './answers';
import { StoredFailureError } from './errors';
import { decodeOutcome } from './protocol/record';
import type { JsonObject, JsonValue } from './types';

export { fingerprint } from './fingerprint';

/**
 * Powertools' `responseHook` (`IdempotencyConfig`) for a handler on a table retrysafe writes too: a
 * replay of a record retrysafe stored answers its receipt (the tool's JSON object), not the stored
 * envelope `{ receipt: "<JSON text>", replayed }`; a stored failure is thrown (`StoredFailureError`, with
 * its `code`), as retrysafe answers it. Any other response — a record Powertools' handler stored — is
 * returned as it is. docs/design.md, "Powertools and retrysafe on one table".
 */
export function powertoolsResponseHook(response: unknown): JsonValue {
  const outcome = decodeOutcome(response);
  const ours = outcome !== undefined && (typeof outcome.receipt === 'string' || typeof outcome.failure === 'string');
  if (!ours) return response as JsonValue;
  if (outcome.receipt !== undefined) {
    try {
      return JSON.parse(outcome.receipt) as JsonObject;
    } catch {
      // Not the text retrysafe stores: `internal`, as retrysafe answers it — never the stored text in an error.
      throw new StoredFailureError(failureOf({ replayed: outcome.replayed, failure: 'internal' }));
    }
  }
  throw new StoredFailureError(failureOf(outcome));
}
