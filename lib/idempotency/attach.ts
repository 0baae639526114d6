/**
 * Attach (Restate's answer to a duplicate in flight): a caller whose claim was refused by a live attempt
 * of the same arguments waits for that attempt's outcome instead of answering `pending` at once — reading
 * the record (one consistent GetItem each time, never a write), at short growing intervals, for at most
 * a cap, its own deadline allowing. The attempt's outcome in time is answered as a replay (what a later
 * retry would be told); an attempt that stops holding the call (abandoned, released, expired) leaves
 * the key to one more claim; one that outlasts the wait is `pending`, as without attaching.
 *
 *   refused by live ──read──read────read────────read──▶ budget's end: pending (as before)
 *                       │     │      └ completed: replay of its outcome (idempotent: true)
 *                       │     └ abandoned, released, expired, erased: claim again (claimCall)
 *                       └ live: wait longer (50, 100, 200, 250, 250 … ms)
 *
 * The budget is the least of the cap, this invocation's time less `ATTACH_ANSWER_MARGIN_MS`, and the
 * holder's lock (past it the record is abandoned: a claim takes it over). Only a caller attaches: the
 * completer (`resume`) never waits for an attempt it did not come for.
 */
import type { Ending } from './answers';
import { classify, isParked } from './call-state';
import { type ClaimPhase, type ClaimRequest, claimCall, refusalOf } from './protocol/claim';
import type { CallRecord } from './protocol/record';
import { type IdempotencyTable, readCallRecord } from './protocol/table';

/** How a duplicate waits for the attempt in its way (`ToolRuntimeOptions.attach`). */
export interface AttachOptions {
  /**
   * The longest a duplicate waits for a live attempt of the same call (ms); 0 answers `pending` at once.
   * Most tool calls finish within it; each waiting Lambda costs its GB-s, each `pending` an agent's turn.
   * @default DEFAULT_ATTACH_MAX_WAIT_MS (2000)
   */
  readonly maxWaitMs?: number;
  /**
   * How the time between two reads passes: an input, so a simulation can move its own clock.
   * @default a `setTimeout` promise
   */
  readonly sleep?: (ms: number) => Promise<void>;
}

/** The attach cap: most tool calls (a payment, a message, a ticket) finish within 2 s. */
export const DEFAULT_ATTACH_MAX_WAIT_MS = 2_000;
/**
 * At most this many reads per wait: a bound that holds even if the clock does not move, and one that
 * never cuts the default cap short (50 + 100 + 200 + 7 × 250 ms = 2.1 s).
 */
export const ATTACH_MAX_READS = 10;
/** Time kept back from the invocation's deadline to answer (or claim) after the wait. */
export const ATTACH_ANSWER_MARGIN_MS = 1_000;
/**
 * The first interval between reads, doubled after each read up to `ATTACH_MAX_INTERVAL_MS`: a quick
 * write is seen within ~50–150 ms, and an outcome stored between two reads waits ≤ 250 ms to be seen.
 */
export const ATTACH_FIRST_INTERVAL_MS = 50;
export const ATTACH_MAX_INTERVAL_MS = 250;

/** Attach options with their defaults resolved (a `CallPlan`'s). */
export interface Attachment {
  readonly maxWaitMs: number;
  readonly sleep: (ms: number) => Promise<void>;
}

/** The options with their defaults. */
export function attachmentOf(options: AttachOptions = {}): Attachment {
  return {
    maxWaitMs: Math.max(0, options.maxWaitMs ?? DEFAULT_ATTACH_MAX_WAIT_MS),
    sleep: options.sleep ?? sleepFor,
  };
}

function sleepFor(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

type Pending = Extract<Ending, { kind: 'pending' }>;

/**
 * The claim phase's answer when `refused` (a caller's claim refused by a live attempt of the same
 * arguments) is waited on: the attempt's outcome replayed, the claim phase run again once the attempt
 * stopped holding the call, or `refused` (with the latest record read) when the budget ends first.
 * Anything else is returned as it is. Never writes, except through the one more `claimCall`.
 */
export async function attach(
  table: IdempotencyTable,
  request: ClaimRequest,
  refused: ClaimPhase,
  attachment: Attachment,
): Promise<ClaimPhase> {
  if (!attachable(refused, request)) return refused;
  let pending: Pending = refused;
  const endMs = Math.min(Date.now() + attachment.maxWaitMs, request.lockEndsMs - ATTACH_ANSWER_MARGIN_MS);
  if (refused.call && parkedPast(refused.call, endMs)) return refused;
  let interval = ATTACH_FIRST_INTERVAL_MS;
  for (let reads = 0; reads < ATTACH_MAX_READS; reads++) {
    const holderLockEndsMs = pending.call?.lockEndsMs ?? Number.NEGATIVE_INFINITY;
    const leftMs = Math.min(endMs, holderLockEndsMs) - Date.now();
    if (leftMs <= 0) break;
    await attachment.sleep(Math.min(interval, leftMs));
    interval = Math.min(ATTACH_MAX_INTERVAL_MS, interval * 2);
    let record: Awaited<ReturnType<typeof readCallRecord>>;
    try {
      record = await readCallRecord(table, request.recordKey);
    } catch {
      return pending; // a failed read changes nothing: the record was live when last read
    }
    const state = classify(record, Date.now());
    const answer = record && (state === 'live' || state === 'completed') ? refusalOf(record, request) : undefined;
    if (answer?.kind === 'pending') {
      pending = answer;
      if (record && parkedPast(record, endMs)) break;
      continue;
    }
    if (answer) return answer; // a replay of its outcome (or of its failure), or conflict
    // Abandoned (its holder died or parked), released, expired, erased: as a claim now would.
    return claimCall(table, request);
  }
  return pending;
}

/** A caller's claim refused by a live attempt of the same arguments: the one refusal worth waiting on. */
function attachable(phase: ClaimPhase, request: ClaimRequest): phase is Pending {
  if (phase.kind !== 'pending' || request.resume !== undefined || !phase.call) return false;
  return phase.call.validation === request.validation && classify(phase.call, Date.now()) === 'live';
}

/**
 * A parked call (a provider's wait, a window's holder in the way) whose lock ends after `endMs`: no attempt
 * runs it before its lock ends, so nothing changes within the wait — its `pending` answers at once with all
 * of the park (liveness, rule 8). One whose park ends within the wait is waited out, then taken over.
 */
function parkedPast(record: CallRecord, endMs: number): boolean {
  return isParked(record) && record.lockEndsMs > endMs;
}
