/**
 * The record on disk, in one place: the attribute names of an idempotency item (call records and dedupe
 * windows' intents), the values its `status` takes, and the codecs between a table item and the typed
 * records the rest of the core reads (`callRecordOf`, `intentOf`, the `call` and `data` attributes — the
 * latter's codec in `outcome.ts`, re-exported here).
 * Nothing else in retrysafe names a stored attribute or decodes one; the conditional writes on these items
 * are in this folder too (`table.ts` names the conditions, one file per concept holds its writes).
 * Plain data and functions only (no SDK): `retrysafe/idempotency/record` is this file.
 */
import canonicalize from 'canonicalize';
import type { JsonObject } from '../types';
import { decodeOutcome, receiptTextOf, type StoredOutcome } from './outcome';

export { decodeOutcome, MAX_RECEIPT_BYTES, receiptTextOf, type StoredOutcome } from './outcome';

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
  readonly lockEnd: string;
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
   * window's end plus `MAX_WINDOWED_TTL_SECONDS` (7 days, the longest TTL a windowed tool may have) — so
   * the intent outlives every call asked inside the window.
   */
  readonly windowEnd: string;
  /**
   * On an intent item: the window it replaced (a map: `end`, `call` — its holder's call id —, `key`, and
   * `before`, the end of the window that one replaced, if any), which still answers the calls asked while it
   * was open; left alone (a marker) when the intent is freed (review 14).
   */
  readonly replacedWindow: string;
  /**
   * On an intent item: every call that may run under its key (a string set of `callId`s: its creator, each
   * call that held it since), and `UNKNOWN_RUNNERS` once an earlier version's intent is taken over (rule 3).
   */
  readonly intentRunners: string;
  /** On a call record: the claim the completer gave up on (`stalled` while it is still the record's claim). */
  readonly stalledClaim: string;
  /** On a call record: the claim that parked it (`park`): no holder, nothing runs it before its lock ends. */
  readonly parkedClaim: string;
  /** On a stalled call record: why the completer gave up on it (`StalledReason`), written with `stalledClaim`. */
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
  /**
   * On a call record: how many of its first attempts made no effect — each parked before its tool ran (a
   * hand-off, `InvokeOptions.handOff`; a dedupe window's holder in the way; a store error before the run),
   * or after a business error of its tool whose intent release failed, while none before it had run. The
   * first attempt after them is the call's first run. Written by such a park (`SET` to its attempt), never
   * removed; absent is 0.
   */
  readonly unrunAttempts: string;
  /**
   * On a call record: how many of its attempts were queued — parked before their tool ran by no failure
   * (a hand-off, a dedupe window's holder in the way) — which the completer's budget does not count. Every
   * park sets it (+1 when queued, else +0), never removed; absent, the record was parked by an earlier
   * version (whose `unrunAttempts` counted its queued parks, and its failed-before-the-run ones) and that
   * count is read instead — a park by this version starts from it.
   */
  readonly queuedAttempts: string;
  /**
   * The `callId` of the dedupe window's holder a call was queued behind (its park, `pending`): once that call
   * completed, it answers this one, even after the intent was replaced or freed (review 13, R13-8).
   */
  readonly waitedOn: string;
  /** On a completed call record: its attempt freed the intent it created first (rule 1): it answers no waiter. */
  readonly intentFreed: string;
}

/** The attribute names retrysafe uses unless told otherwise. */
export const DEFAULT_RECORD_ATTRIBUTES: RecordAttributes = {
  key: 'id',
  expiry: 'expiration',
  lockEnd: 'in_progress_expiration',
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
  replacedWindow: 'replaced_window',
  intentRunners: 'intent_runners',
  stalledClaim: 'stalled_claim',
  parkedClaim: 'parked_claim',
  stalledReason: 'stalled_reason',
  createdAt: 'created_at',
  completedAt: 'completed_at',
  unrunAttempts: 'unrun_attempts',
  queuedAttempts: 'queued_attempts',
  waitedOn: 'waited_on',
  intentFreed: 'intent_freed',
};

/**
 * The attribute names a caller gave over the defaults: the one place they are merged. An option that names
 * no attribute is refused (one renamed since included: the lock's end is `lockEnd`), never dropped.
 */
export function recordAttributes(given?: Partial<RecordAttributes>): RecordAttributes {
  const attributes: { -readonly [K in keyof RecordAttributes]: string } = { ...DEFAULT_RECORD_ATTRIBUTES };
  for (const [option, name] of Object.entries(given ?? {})) {
    if (!Object.hasOwn(DEFAULT_RECORD_ATTRIBUTES, option)) throw new TypeError(`attributes.${option}: unknown`);
    // Left unset (an environment variable that is not there): the default, as Powertools' options do.
    if (name === undefined) continue;
    if (typeof name !== 'string' || name === '') {
      throw new TypeError(`attributes.${option}: an attribute's name is a non-empty string`);
    }
    attributes[option as keyof RecordAttributes] = name;
  }
  // Two options naming one attribute would write one over the other (a park's marker over `status`: the
  // record no longer reads as a call, and the call is lost — review 4, F7).
  const named = new Map<string, string>();
  for (const [option, name] of Object.entries(attributes)) {
    const other = named.get(name);
    if (other !== undefined) {
      throw new TypeError(`attributes.${option}: ${JSON.stringify(name)} is attributes.${other}'s name too`);
    }
    named.set(name, option);
  }
  return attributes;
}

/** The idempotency table's name unless told otherwise. */
export const DEFAULT_IDEMPOTENCY_TABLE_NAME = 'retrysafe-idempotency';

/** The `status` values a call record can hold: a claim writes the first, a store the second, erase the third. */
export const STATUS = {
  inProgress: 'INPROGRESS',
  completed: 'COMPLETED',
  erased: 'ERASED',
} as const;

/**
 * Why the completer gave up on a call (`stalled`): it failed every one of `maxAttempts` attempts; its tool
 * is not one the completer serves (a deploy dropped or renamed it); its stored call cannot be read (or the
 * tool as deployed now refuses it); its record expires before its next re-run could run (`expiring`); or
 * nobody can: Powertools' handler wrote it and its lock ended (`powertools`, `callRecordOf`).
 */
export type StalledReason = 'attempts' | 'unknown_tool' | 'unreadable_call' | 'expiring' | 'powertools';

/** A call record as read from the table, every attribute typed. */
export interface CallRecord {
  readonly recordKey: string;
  readonly status: string;
  /** The claim that holds the record: only it may store, park or release it. None on a tombstone. */
  readonly claimId: string | undefined;
  /** Epoch ms after which an INPROGRESS record is abandoned. */
  readonly lockEndsMs: number;
  /** Epoch s: the TTL. */
  readonly expiresAtS: number;
  /** Hash of the arguments' fingerprint. None on a tombstone. */
  readonly validation: string | undefined;
  readonly tenant: string | undefined;
  readonly tool: string | undefined;
  /** While in flight: what it takes to finish the call. */
  readonly call: StoredCall | undefined;
  /** The downstream key the call's effect runs under, when it is not the one derived from the call. */
  readonly downstreamKey: string | undefined;
  /** Attempts that claimed this record: 1 for the first, +1 for each takeover. */
  readonly attempt: number;
  /** The call's id (`<record key>@<instance>`): what tools stamp their commits with. */
  readonly callId: string;
  /** The stored outcome (COMPLETED). */
  readonly outcome: StoredOutcome | undefined;
  /** The claim the completer gave up on (`stalled` while it is still `claimId`). */
  readonly stalledClaimId: string | undefined;
  /** The claim that parked it (`park`): parked, not held, while it is still `claimId`. */
  readonly parkedClaimId?: string | undefined;
  /** Why the completer gave up on it (written with `stalledClaimId`); undefined on a record an earlier version stalled. */
  readonly stalledReason?: StalledReason | undefined;
  /**
   * When the call's first claim was written (epoch ms): when its caller asked. Undefined on a record an
   * earlier version claimed (a deployment's old functions may still write them): readers derive it from
   * the TTL the first claim set (`createdAtOf`).
   */
  readonly createdAtMs: number | undefined;
  /** When its outcome was stored (epoch ms); undefined in flight, and on a record an earlier version stored. */
  readonly completedAtMs: number | undefined;
  /** `powertools` when Powertools' own handler wrote it (`callRecordOf`): no claim, no call. Else undefined. */
  readonly writtenBy?: 'powertools';
  /** How many of its first attempts made no effect (read by a takeover, `Claim.ranBefore`, and `neverRan`); 0. */
  readonly unrunAttempts?: number;
  /** How many of its attempts were queued, not failed: the completer's budget counts the others; 0. */
  readonly queuedAttempts?: number;
  /** The window's holder this call waited on (`waited_on`, its `callId`), while it never ran (review 13, R13-8). */
  readonly waitedOn?: string | undefined;
  /** Its attempt freed the intent it created before storing this outcome (`intent_freed`; review 16, R16-1). */
  readonly intentFreed?: boolean;
}

/** A call's id: the record key and the instance its first claim started. */
export function callIdOf(recordKey: string, instance: string): string {
  return `${recordKey}@${instance}`;
}

/** The record key a call id names, or undefined when it names none (not `<record key>@<instance>`). */
export function recordKeyOfCallId(callId: string): string | undefined {
  const at = callId.lastIndexOf('@');
  return at < 0 ? undefined : callId.slice(0, at);
}

/** A key of the idempotency table that names a call record (not an intent, not anything else). */
export function isCallRecordKey(key: string): boolean {
  return !isIntentKey(key) && key.includes('#');
}

/** A key of the idempotency table that names a dedupe window's intent (`<tool>#intent#<hash>`). */
export function isIntentKey(key: string): boolean {
  return key.includes('#intent#');
}

/** An attribute of an unmarshalled item, if it is a string. */
export function text(item: Record<string, unknown>, name: string): string | undefined {
  return typeof item[name] === 'string' ? item[name] : undefined;
}

/** An attribute of an unmarshalled item, if it is a number. */
export function number(item: Record<string, unknown>, name: string): number | undefined {
  return typeof item[name] === 'number' ? item[name] : undefined;
}

/**
 * A table item (unmarshalled) as a typed call record, or undefined when it is not one as every claim
 * writes it (key, status, call instance, attempt, TTL and lock; a tombstone keeps them all) nor as
 * Powertools 2.35's handler on this table writes it (docs/design.md, "Powertools and retrysafe on one
 * table"): key, status, TTL, validation hash, its result, and a lock only if it had a Lambda context (without
 * one it holds the key until the TTL, and so does this lock) — no instance, attempt, claim or call. That
 * one reads as attempt 1 of the call `<record key>@powertools` (stamped on nothing), stalled (`powertools`)
 * once its lock ends (`classify`: no takeover can name a claim, rule 2), its result as its outcome.
 */
export function callRecordOf(item: Record<string, unknown>, attr: RecordAttributes): CallRecord | undefined {
  const recordKey = text(item, attr.key);
  const status = text(item, attr.status);
  const instance = text(item, attr.callInstance);
  const attempt = number(item, attr.attempt);
  const expiresAtS = number(item, attr.expiry);
  if (recordKey === undefined || status === undefined || expiresAtS === undefined) return undefined;
  // Every retrysafe claim writes both; Powertools' handler neither.
  const powertools = instance === undefined && attempt === undefined;
  const lockEndsMs = number(item, attr.lockEnd) ?? (powertools ? expiresAtS * 1000 : undefined);
  const read = powertools ? POWERTOOLS_STATUSES.includes(status) : instance !== undefined && attempt !== undefined;
  if (lockEndsMs === undefined || !read) return undefined;
  return {
    recordKey,
    callId: callIdOf(recordKey, instance ?? 'powertools'),
    status,
    claimId: text(item, attr.claim),
    lockEndsMs,
    expiresAtS,
    validation: text(item, attr.validation),
    tenant: text(item, attr.tenant),
    tool: text(item, attr.tool),
    call: decodeCall(item[attr.call]),
    downstreamKey: text(item, attr.downstreamKey),
    attempt: attempt ?? 1,
    outcome: powertools ? powertoolsOutcomeOf(status, item[attr.data]) : decodeOutcome(item[attr.data]),
    stalledClaimId: text(item, attr.stalledClaim),
    parkedClaimId: text(item, attr.parkedClaim),
    // Written only by `markStalled` (one of the three); a reader that meets another falls back to `attempts`.
    stalledReason: powertools ? 'powertools' : (text(item, attr.stalledReason) as StalledReason | undefined),
    createdAtMs: number(item, attr.createdAt),
    completedAtMs: number(item, attr.completedAt),
    writtenBy: powertools ? 'powertools' : undefined,
    unrunAttempts: number(item, attr.unrunAttempts) ?? 0,
    // Every park writes it (0 added when not queued): absent, an earlier version parked it, whose
    // `unrun_attempts` counted its queued parks (review 7, R7-3).
    queuedAttempts: number(item, attr.queuedAttempts) ?? number(item, attr.unrunAttempts) ?? 0,
    waitedOn: text(item, attr.waitedOn),
    intentFreed: item[attr.intentFreed] === true,
  };
}

/** The `status` values Powertools' handler writes, and the tombstone erase makes of its completed record. */
const POWERTOOLS_STATUSES: readonly string[] = [STATUS.inProgress, STATUS.completed, STATUS.erased];

/**
 * A completed Powertools record's outcome: its handler's result, stored as it is — unless it is exactly a
 * stored outcome's shape (`decodeOutcome`), read as that. Otherwise a JSON object a tool could return (`receiptTextOf`) is the receipt, its effect the call's own (`replayed: false`); anything
 * else (none, a string, a list, a set, bytes, a number JSON cannot hold) is `internal`, never a second run.
 */
function powertoolsOutcomeOf(status: string, data: unknown): StoredOutcome | undefined {
  if (status !== STATUS.completed) return undefined;
  // A result of exactly an outcome's shape is read as one, as `powertoolsResponseHook` reads it: one rule.
  const outcome = decodeOutcome(data);
  if (outcome !== undefined) return outcome;
  const stored = receiptTextOf(data);
  return 'text' in stored ? { receipt: stored.text, replayed: false } : { replayed: false, failure: 'internal' };
}

/** What a claim carries while in flight, so that anyone can finish the call. */
export interface StoredCall {
  readonly user: string;
  readonly clientKey: string;
  readonly args: JsonObject;
}

/** The `call` attribute as a claim writes it: canonical JSON of `{ user, key, args }`. */
export function encodeCall(call: StoredCall): string {
  return canonicalize({ user: call.user, key: call.clientKey, args: call.args }) as string;
}

/** The `call` attribute, or undefined when it is not one (never throws: a bad item must not stop the completer). */
export function decodeCall(text: unknown): StoredCall | undefined {
  if (typeof text !== 'string') return undefined;
  try {
    const call = JSON.parse(text) as { user?: unknown; key?: unknown; args?: unknown };
    if (typeof call.user !== 'string' || typeof call.key !== 'string') return undefined;
    if (call.args === null || typeof call.args !== 'object' || Array.isArray(call.args)) return undefined;
    return { user: call.user, clientKey: call.key, args: call.args as JsonObject };
  } catch {
    return undefined;
  }
}
