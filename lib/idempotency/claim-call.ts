/**
 * The claim phase of an attempt: a first claim, or a takeover of the abandoned attempt it found, or the
 * answer the record in its way gives — a replay of its outcome, `pending` while it runs, `conflict` for
 * other arguments, `not_found` once erased. These are the answers Powertools' handler gave a refused
 * claim (`IdempotencyValidationError`, `IdempotencyAlreadyInProgressError`, the response hook), decided
 * here from the typed record instead of rethrown through it.
 */
import { type Ending, failed, REFUSED, StoreWriteError } from './answers';
import { classify, isAbandoned, ttlNeededFor } from './call-state';
import { type Claim, claim, type FirstClaim, takeOver } from './protocol/claim';
import { type CallRecord, STATUS } from './protocol/record';
import type { IdempotencyTable } from './protocol/table';

/** What an attempt claims with. */
export interface ClaimRequest extends Omit<FirstClaim, 'call'> {
  /** The tool's TTL (a takeover of a record an earlier version claimed derives its first claim's time from it). */
  readonly ttlSeconds: number;
  /** The `call` attribute a first claim writes (`encodeCall`); not built for a resume. */
  readonly call: () => string;
  /**
   * Take over only this claim, never claim afresh: the completer finishing what it saw.
   * @default undefined (claim, or take over an abandoned attempt of the same arguments)
   */
  readonly resume: string | undefined;
}

/** The claim phase's result: this attempt's claim, or how the attempt ends without one. */
export type ClaimPhase = { readonly kind: 'claimed'; readonly claim: Claim } | Ending;

/**
 * The record in the way is gone for a claim since the write that read it: it expired before its answer,
 * or its holder released it (a first attempt's business error) before the takeover. Ask again.
 */
const GONE_MEANWHILE = { kind: 'gone_meanwhile' } as const;

/** How often a claim is tried again when the record in its way keeps going as it is read (Powertools' `MAX_RETRIES`). */
const RETRIES = 2;

/** Claims the call for this attempt, or answers without a claim. Never throws: a failed write is an `Ending`. */
export async function claimCall(table: IdempotencyTable, request: ClaimRequest): Promise<ClaimPhase> {
  try {
    for (let retry = 0; ; retry++) {
      const phase = await claimOnce(table, request);
      if (phase.kind !== GONE_MEANWHILE.kind) return phase;
      if (retry === RETRIES) return failed(REFUSED.changedWhileRead());
    }
  } catch (error) {
    return failed(new StoreWriteError('claim', { cause: error }));
  }
}

async function claimOnce(table: IdempotencyTable, request: ClaimRequest): Promise<ClaimPhase | typeof GONE_MEANWHILE> {
  const nowMs = Date.now();
  // A claim without a future lock would hold the key until its TTL (or never hold it).
  if (request.lockEndsMs <= nowMs) return failed(REFUSED.noTimeLeft());
  if (request.resume !== undefined) return takeOverOnce(table, request, request.resume, nowMs);
  const claimed = await claim(table, { ...request, call: request.call() }, nowMs);
  if (claimed.kind === 'claimed') return claimed;
  const existing = claimed.existing;
  if (!existing) return failed(REFUSED.notACallRecord(request.recordKey));
  const state = classify(existing, nowMs);
  if (state === 'erased') return failed(REFUSED.erased());
  if (isAbandoned(state) && existing.validation === request.validation && existing.claimId !== undefined) {
    return takeOverOnce(table, request, existing.claimId, nowMs);
  }
  return answerOfRecord(existing, request);
}

/** Takes over the attempt that held `fromClaimId`, or answers why not. */
async function takeOverOnce(
  table: IdempotencyTable,
  request: ClaimRequest,
  fromClaimId: string,
  nowMs: number,
): Promise<ClaimPhase | typeof GONE_MEANWHILE> {
  const taken = await takeOver(table, { ...request, fromClaimId }, nowMs);
  if (taken.kind === 'claimed') return taken;
  const existing = taken.existing;
  // No record under the key now (its holder released it, or it expired and was swept): the key is free.
  // A caller claims it again; the completer never claims afresh (rule 2).
  if (!existing) return request.resume !== undefined ? failed(REFUSED.nothingToResume()) : GONE_MEANWHILE;
  const state = classify(existing, nowMs);
  if (state === 'erased') return failed(REFUSED.erased());
  if (
    existing.claimId === fromClaimId &&
    isAbandoned(state) &&
    existing.expiresAtS < ttlNeededFor(request.lockEndsMs)
  ) {
    // The new lock would outlive the record (on some worker's clock): past its TTL it counts as expired —
    // a fresh claim, erase and the poll would all treat the running call as gone. Pending until the record
    // expires (then a fresh claim runs it, under the same downstream key).
    // Nothing lets it run before then: the wait is all of it, not a poll's second.
    return { kind: 'pending', until: { afterMs: existing.expiresAtS * 1000 - nowMs }, call: existing };
  }
  if (request.resume !== undefined && existing.claimId !== request.resume && state !== 'completed') {
    // Someone else took it, finished it, or it was erased and claimed again: not ours to finish.
    return failed(REFUSED.nothingToResume());
  }
  return answerOfRecord(existing, request);
}

/**
 * The answer of a record read after the claim was refused (attach, attach.ts), as the refusal itself
 * would give it — or undefined once it expired (then the key is free: claim again).
 */
export function refusalOf(existing: CallRecord, request: ClaimRequest): ClaimPhase | undefined {
  const answer = answerOfRecord(existing, request);
  return answer.kind === GONE_MEANWHILE.kind ? undefined : answer;
}

/**
 * The answer of the record that refused the claim: other arguments → `conflict`; in progress →
 * `pending` until its lock ends; completed → its outcome, replayed.
 */
function answerOfRecord(existing: CallRecord, request: ClaimRequest): ClaimPhase | typeof GONE_MEANWHILE {
  if (existing.validation !== request.validation) return failed(REFUSED.conflict());
  // The write saw it unexpired; it expired since: claim again.
  if (classify(existing, Date.now()) === 'expired') return GONE_MEANWHILE;
  if (existing.status === STATUS.inProgress) {
    return { kind: 'pending', until: { atMs: existing.lockEndsMs }, call: existing };
  }
  if (existing.status === STATUS.completed) {
    return { kind: 'outcome', outcome: { ...existing.outcome, replayed: true }, replay: 'client_key', call: existing };
  }
  return failed(REFUSED.notACallRecord(existing.recordKey));
}
