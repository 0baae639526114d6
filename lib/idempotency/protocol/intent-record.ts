/**
 * A dedupe window's intent as it is on disk (docs/state-machine.md, "Dedupe-window intent"): its holder, its
 * key, its window, its runners — the item ↔ intent mapping beside the call record's (record.ts), whose
 * attribute names it uses. Its writes are intent-writes.ts; what a claimant does with it, intent.ts.
 */
import { isIntentKey, number, type RecordAttributes, text } from './record';

/** The call that holds a dedupe window's intent: its record, the claim it held it with, and the call itself. */
export interface IntentHolder {
  readonly recordKey: string;
  readonly claimId: string;
  /** The call (`<record key>@<instance>`): the holder is the call, whichever of its attempts runs. */
  readonly callId: string;
}

/** A dedupe window's intent item as read from the table. */
export interface Intent {
  readonly intentKey: string;
  readonly holder: IntentHolder;
  /** The key its effect runs under, fixed when it was created. */
  readonly downstreamKey: string;
  /** The end of its dedupe window (epoch s). */
  readonly windowEndsAtS: number;
  /** The window it replaced, which still answers the calls asked in it (review 14, R14-4, R14-5). */
  readonly replaced: PastWindow | undefined;
  /** The calls that may run under its key (`callId`s) as far as it knows, its holder among them. */
  readonly runners: readonly string[];
  /** False for an earlier version's intent (none listed) or one taken over since (`UNKNOWN_RUNNERS` kept). */
  readonly runnersKnown: boolean;
  /**
   * Its TTL (epoch s): the window's end plus `MAX_WINDOWED_TTL_SECONDS` (an earlier version's: plus its
   * records' TTL), or later (a window it remembers) — when every call asked in it has expired.
   */
  readonly expiresAtS: number;
}

/**
 * A dedupe window an intent replaced once it ended: when it ended (epoch s), the call that held it when it was
 * replaced (`callId`: its outcome is the window's), the key its effect ran under, and when the window it had
 * replaced in turn ended (`previousEndsAtS`; none: it replaced none) — so the calls it answers are those asked
 * after that and before its own end (the first window not ended when they were asked).
 */
export interface PastWindow {
  readonly endsAtS: number;
  readonly callId: string;
  readonly downstreamKey: string;
  readonly previousEndsAtS?: number | undefined;
  /**
   * The window before it (the one that ended at `previousEndsAtS`), with its own prior, and so on — kept only
   * where an erase turned an intent into a marker: the intent's own window is then the marker's, and every
   * window it remembered is still answered (review 19, R19-2; review 20, R20-1: a second erase dropped the
   * prior's prior), 24 of them at most (`pastWindowsOf`). A replace after the window keeps none (rule 3).
   */
  readonly prior?: PastWindow | undefined;
}

/**
 * What is left of an intent once its holder freed it (rule 1): no holder, no window now; the window it
 * replaced, if any, still answers the calls asked in it, until its TTL. A create passes it.
 */
export interface IntentMarker {
  readonly intentKey: string;
  readonly replaced: PastWindow | undefined;
  readonly expiresAtS: number;
}

/** A past window as an intent item holds it (`replaced_window`, a map; its prior, if any, a map in it). */
export function pastWindowItem(window: PastWindow): Record<string, unknown> {
  const item: Record<string, unknown> = { end: window.endsAtS, call: window.callId, key: window.downstreamKey };
  if (window.previousEndsAtS !== undefined) item.before = window.previousEndsAtS;
  if (window.prior) item.prior = pastWindowItem(window.prior);
  return item;
}

/** DynamoDB nests maps 32 deep: a chain of priors stops well short of it. */
const MAX_PRIORS = 24;

/** `replaced_window` as written by `pastWindowItem`, or undefined. */
function pastWindowOf(value: unknown, depth = 0): PastWindow | undefined {
  if (value === null || typeof value !== 'object') return undefined;
  const map = value as Record<string, unknown>;
  const [endsAtS, callId, downstreamKey] = [number(map, 'end'), text(map, 'call'), text(map, 'key')];
  if (endsAtS === undefined || callId === undefined || downstreamKey === undefined) return;
  const prior = depth < MAX_PRIORS ? pastWindowOf(map.prior, depth + 1) : undefined;
  return { endsAtS, callId, downstreamKey, previousEndsAtS: number(map, 'before'), ...(prior ? { prior } : {}) };
}

/**
 * A held intent's own window as a past one: its end, its holder's call, its key, and when the window it
 * replaced ended — with that window itself (and the windows it remembers) as its `prior` when `withPrior`
 * (an erase's marker, R19-2, R20-1).
 */
export function ownWindowOf(held: Intent, withPrior = false): PastWindow {
  const window = {
    endsAtS: held.windowEndsAtS,
    callId: held.holder.callId,
    downstreamKey: held.downstreamKey,
    previousEndsAtS: held.replaced?.endsAtS,
  };
  return withPrior && held.replaced ? { ...window, prior: held.replaced } : window;
}

/**
 * `window` and its priors, `MAX_PRIORS` of them at most (a marker erased that often within a TTL: the oldest are
 * forgotten, rule 3's `forgotten`). None is left out for its age: a prior's calls may have been asked under a
 * longer TTL than the intent's (a deploy changed it: review 21, R21-1), and the item's TTL, which outlives
 * every window it remembers, takes them all.
 */
export function pastWindowsOf(window: PastWindow, depth = 0): PastWindow {
  const { prior, ...rest } = window;
  return prior !== undefined && depth < MAX_PRIORS ? { ...rest, prior: pastWindowsOf(prior, depth + 1) } : rest;
}

/** Whether it is a held intent, not a marker. */
export function isHeld(intent: Intent | IntentMarker): intent is Intent {
  return 'holder' in intent;
}

/** A table item (unmarshalled) as an intent's marker (no holder; a replaced window or none), or undefined. */
export function markerOf(item: Record<string, unknown>, attr: RecordAttributes): IntentMarker | undefined {
  const intentKey = text(item, attr.key);
  const expiresAtS = number(item, attr.expiry);
  if (intentKey === undefined || !isIntentKey(intentKey) || expiresAtS === undefined) return;
  const replaced = pastWindowOf(item[attr.replacedWindow]);
  return item[attr.intentHolder] === undefined ? { intentKey, replaced, expiresAtS } : undefined;
}

/** Kept among the runners of an intent whose earlier runners are unknown (an earlier version's): no call id. */
export const UNKNOWN_RUNNERS = '?';

/** A table item (unmarshalled) as an intent, or undefined when it is not one as every intent write leaves it. */
export function intentOf(item: Record<string, unknown>, attr: RecordAttributes): Intent | undefined {
  const intentKey = text(item, attr.key);
  const recordKey = text(item, attr.intentHolder);
  const claimId = text(item, attr.claim);
  const callId = text(item, attr.callInstance);
  const downstreamKey = text(item, attr.downstreamKey);
  const windowEndsAtS = number(item, attr.windowEnd);
  const expiresAtS = number(item, attr.expiry);
  if (intentKey === undefined || recordKey === undefined || claimId === undefined || callId === undefined) return;
  if (downstreamKey === undefined || windowEndsAtS === undefined || expiresAtS === undefined) return;
  const listed = item[attr.intentRunners];
  const runners = new Set(listed instanceof Set ? [...listed].filter((r): r is string => typeof r === 'string') : []);
  const runnersKnown = listed instanceof Set && !runners.delete(UNKNOWN_RUNNERS);
  // In one order whatever order the set comes in (DynamoDB's is none): they are read in it.
  const sorted = [...runners.add(callId)].sort();
  const holder = { recordKey, claimId, callId };
  const replaced = pastWindowOf(item[attr.replacedWindow]);
  return { intentKey, holder, downstreamKey, windowEndsAtS, replaced, runners: sorted, runnersKnown, expiresAtS };
}
