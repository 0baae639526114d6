/**
 * What a call record's key, validation hash and TTL are derived from — Powertools 2.35's derivation,
 * pinned here. `BasePersistenceLayer` hashes a JMESPath selection of the payload as
 * `base64(sha256(JSON.stringify(deepSort(selection))))` and prefixes the record key with `<prefix>#`;
 * retrysafe's selections are plain strings and arrays of strings (which `deepSort` leaves as they
 * are), so the same bytes come from `JSON.stringify` alone. Records written when retrysafe ran
 * Powertools' handler are found under the same keys (test/unit/derivation.test.ts compares every
 * function here with Powertools' own), and a Powertools upgrade cannot move them.
 */
import { createHash } from 'node:crypto';
import { IdempotencyConfig } from '@aws-lambda-powertools/idempotency';

/** What a call record is keyed by: who asked, and the key they sent. */
export type RecordKeyParts = readonly [tenant: string, user: string, clientKey: string];

/** Powertools' hash of a selection (`hashFunction: 'sha256'`, base64). */
function hashOf(selection: string | RecordKeyParts): string {
  return createHash('sha256').update(JSON.stringify(selection)).digest('base64');
}

/** The record key of `tool`'s call: `<tool>#<hash of [tenant, user, client key]>`. */
export function recordKeyOf(tool: string, parts: RecordKeyParts): string {
  return `${tool}#${hashOf(parts)}`;
}

/** The validation hash of a call's arguments, from their fingerprint: other arguments under a key are a conflict. */
export function validationOf(fingerprint: string): string {
  return hashOf(fingerprint);
}

/** The TTL a record written at `nowMs` gets (epoch s), rounded as Powertools rounds it. */
export function expiresAtSOf(ttlSeconds: number, nowMs: number): number {
  return Math.round(nowMs / 1000 + ttlSeconds);
}

/**
 * Whether `POWERTOOLS_IDEMPOTENCY_DISABLED` is set, read as Powertools reads it (`true`, `1`, `yes`, `on`…).
 * Powertools would then run every call bare; retrysafe refuses to run writes without protection.
 */
export function idempotencyDisabled(): boolean {
  return !new IdempotencyConfig({}).isEnabled();
}
