/**
 * The layout of an idempotency record in DynamoDB. Every name is an option of the runtime (the way
 * Powertools' persistence layer takes its attribute names), so a project with its own table layout can
 * use the core unchanged; these are the defaults.
 */
export interface RecordAttributes {
  /** Partition key: `<tool>#<sha256 of [tenant, user, client key]>`. Hash-spread, never static. */
  readonly key: string;
  /** TTL attribute, epoch seconds. Expiry is decided by the claim's condition, not by deletion. */
  readonly expiry: string;
  /** The lock: epoch milliseconds after which an INPROGRESS claim may be taken over (the invocation deadline). */
  readonly inProgressExpiry: string;
  readonly status: string;
  /** The stored result (receipt as JSON text, plus whether it was itself a replay). */
  readonly data: string;
  /** Hash of the argument fingerprint: same key + other fingerprint is a conflict. */
  readonly validation: string;
  /** Tenant of the caller: lets one tenant's records be found and erased. */
  readonly tenant: string;
  /** Tool name, also the record key's prefix. */
  readonly tool: string;
  /**
   * Random id of the claim that holds the record (its `claimId`): only that claim stores, parks or
   * releases it. On an intent item: the claim id of its holder, as the holder was when it took the intent.
   */
  readonly claim: string;
  /**
   * While a claim is in flight: what it takes to finish the call if its worker dies — the user, the
   * client key and the validated arguments, as canonical JSON. Removed when the result is stored.
   */
  readonly call: string;
  /** On an intent (dedupe window) item: the record key of the call that holds the intent (its holder). */
  readonly intentHolder: string;
  /**
   * The downstream key an effect runs under: on an intent item, fixed when the intent is created; on a
   * call record, only when it differs from the one derived from the call (it took an intent over).
   */
  readonly downstreamKey: string;
  /** On a call record: how many attempts claimed it (1, then +1 per takeover). */
  readonly attempt: string;
  /**
   * On a call record: this call's instance, set by its first claim and kept by every takeover (a claim
   * after the TTL starts a new one). With the record key it makes the `callId` tools stamp their commits
   * with (`<record key>@<instance>`). On an intent item: its holder's whole `callId`.
   */
  readonly callInstance: string;
  /**
   * On an intent item: the end of its dedupe window (epoch s). Its TTL (`expiry`) is later — the
   * window's end plus the records' TTL — so the intent outlives every call asked inside the window.
   */
  readonly windowEnd: string;
  /**
   * On a call record: the claim the completer gave up on after its `maxAttempts` (the call is
   * `stalled` while that claim is still the record's: a retry with its key takes it over as before).
   */
  readonly stalledClaim: string;
  /**
   * On a stalled call record: why the completer gave up on it (`attempts`, `unknown_tool`,
   * `unreadable_call`), written with `stalledClaim`: its poll says which.
   */
  readonly stalledReason: string;
  /**
   * On a call record: when its first claim was written (epoch ms) — the moment its caller asked, kept by
   * every takeover and by the stored outcome: the dedupe window a call falls in, and an MCP task's
   * `createdAt`. Written by the first claim's own PutItem (no write of its own).
   */
  readonly createdAt: string;
  /**
   * On a call record: when its outcome was stored (epoch ms), written by the store's own UpdateItem: an MCP
   * task's `lastUpdatedAt` once it is terminal.
   */
  readonly completedAt: string;
}

/** The attribute names retrysafe uses unless told otherwise. */
export const DEFAULT_RECORD_ATTRIBUTES: RecordAttributes = {
  key: 'id',
  expiry: 'expiration',
  inProgressExpiry: 'in_progress_expiration',
  status: 'status',
  data: 'data',
  validation: 'validation',
  tenant: 'tenant',
  tool: 'tool',
  claim: 'claim_id',
  call: 'call',
  intentHolder: 'intent_owner',
  downstreamKey: 'downstream_key',
  attempt: 'attempt',
  callInstance: 'call_id',
  windowEnd: 'window_end',
  stalledClaim: 'stalled_claim',
  stalledReason: 'stalled_reason',
  createdAt: 'created_at',
  completedAt: 'completed_at',
};

/** The idempotency table's name unless told otherwise. */
export const DEFAULT_IDEMPOTENCY_TABLE_NAME = 'retrysafe-idempotency';
