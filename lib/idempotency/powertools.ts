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
 * replay of an outcome retrysafe stored answers its receipt (the tool's JSON object), not the stored
 * envelope `{ receipt: "<JSON text>", replayed }`; a stored failure is thrown (`StoredFailureError`, with
 * its `code`), as retrysafe answers it. What is retrysafe's outcome is `decodeOutcome`'s one rule (exactly
 * its keys, a receipt that is an object's JSON text, a known error code); anything else — a result
 * Powertools' handler stored, whatever its fields — is returned as it is, and retrysafe replays it as that
 * same object. docs/design.md, "Powertools and retrysafe on one table".
 */
export function powertoolsResponseHook(response: unknown): JsonValue {
  const outcome = decodeOutcome(response);
  if (outcome === undefined) return response as JsonValue;
  if (outcome.receipt === undefined) throw new StoredFailureError(failureOf(outcome));
  return JSON.parse(outcome.receipt) as JsonObject;
}
