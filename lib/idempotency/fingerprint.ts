import { createHash } from 'node:crypto';
import canonicalize from 'canonicalize';
import type { Identity, JsonObject } from './types';

function sha256Hex(text: string): string {
  return createHash('sha256').update(text).digest('hex');
}

/**
 * The fingerprint of a call's arguments: SHA-256 of their RFC 8785 canonical JSON, so field order and
 * number spelling never matter. Taken over the *validated* arguments (defaults applied), without the
 * idempotency key: `{currency: "usd"}` and an omitted currency that defaults to "usd" are one request.
 */
export function fingerprint(args: JsonObject): string {
  const canonical = canonicalize(args);
  if (canonical === undefined) throw new TypeError('arguments cannot be canonicalized');
  return sha256Hex(canonical);
}

/** What a downstream key is derived from: the natural key when the tool has one, else the client key. */
export type DownstreamKeySource =
  | { readonly kind: 'natural'; readonly naturalKey: JsonObject }
  | { readonly kind: 'client'; readonly user: string; readonly clientKey: string; readonly fingerprint: string };

/**
 * The idempotency key sent to an external provider (Stripe's `Idempotency-Key`, the ledger's guard).
 * Deterministic: the same scope gives the same string on every retry, on every worker, after a crash.
 * A natural key is per tenant whoever calls; a client key is per tenant, user, tool *and arguments*
 * (v2), so other arguments under a reused key never meet this call's effect.
 */
export function downstreamKey(tool: string, identity: Pick<Identity, 'tenant'>, source: DownstreamKeySource): string {
  const material =
    source.kind === 'natural'
      ? { v: 1, tenant: identity.tenant, tool, natural: source.naturalKey }
      : { v: 2, tenant: identity.tenant, tool, user: source.user, key: source.clientKey, args: source.fingerprint };
  return `rs1_${sha256Hex(canonicalize(material) as string)}`;
}

/**
 * An id for the thing a create makes (`inv_…`, `msg_…`), derived from the downstream key: a retry, a
 * crashed worker's successor, even a retry after the record's TTL, all name the same object, so the
 * domain's conditional write finds it instead of making a second one.
 */
export function derivedId(prefix: string, fromDownstreamKey: string): string {
  return `${prefix}_${sha256Hex(fromDownstreamKey).slice(0, 24)}`;
}
