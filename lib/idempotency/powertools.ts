/**
 * Powertools' own handler (`makeIdempotent` on `DynamoDBPersistenceLayer`) on a table retrysafe writes too:
 * the response hook with which its replay of a record retrysafe stored answers what retrysafe would.
 * Reading records Powertools' handler wrote is `protocol/record.ts`'s (`callRecordOf`); the configuration
 * both sides share is docs/design.md, "Powertools and retrysafe on one table".
 */
import { failureOf } from './answers';
import { StoredFailureError } from './errors';
import { decodeOutcome } from './protocol/record';
import type { JsonObject, JsonValue } from './types';

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
  if (outcome.receipt !== undefined) return JSON.parse(outcome.receipt) as JsonObject;
  throw new StoredFailureError(failureOf(outcome));
}
