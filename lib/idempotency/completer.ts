import type { Logger } from '@aws-lambda-powertools/logger';
import type { AttributeValue } from '@aws-sdk/client-dynamodb';
import { unmarshall } from '@aws-sdk/util-dynamodb';
import { completerLooksAtMs, recheckDelaySeconds, retriesExhausted, tooLateToRerun } from './backoff';
import { classify } from './call-state';
import { markStalled } from './protocol/completer';
import {
  type CallRecord,
  callRecordOf,
  isCallRecordKey,
  STATUS,
  type StalledReason,
  type StoredCall,
} from './protocol/record';
import {
  type IdempotencyTable,
  type IdempotencyTableOptions,
  idempotencyTable,
  readCallRecord,
} from './protocol/table';
import type { ToolRuntime } from './runtime';
import type { ToolDefinition } from './tool';
import type { InvocationDeadline } from './types';

/**
 * One change of the idempotency table as its stream delivers it (the shape of Lambda's
 * `DynamoDBRecord` and of the Streams API's record): the item's keys, its new image, its order.
 */
export interface StreamChange {
  readonly eventName?: string;
  readonly dynamodb?: {
    readonly Keys?: Record<string, AttributeValue | unknown>;
    readonly NewImage?: Record<string, AttributeValue | unknown>;
    readonly SequenceNumber?: string;
  };
}

/**
 * "Look at this claim again, later": what the completer asks its queue to deliver back. Its fields are
 * named as its SQS message body names them (`{"key":…,"claim":…}`, lib/admin/recheck-queue.ts).
 */
export interface Recheck {
  /** The call record's key (`recordKey`). */
  readonly key: string;
  /** The claim id that was in flight: only that exact claim may be taken over. */
  readonly claim: string;
  /** When to deliver it, in seconds from now (SQS `DelaySeconds`: 0–900). */
  readonly delaySeconds: number;
  /**
   * When the call is due (epoch ms), as its record says (`completerDueAtMs`): later than the delivery when
   * it is more than SQS's 15 min away. Not sent through SQS (the recheck reads the record again); a local
   * run says when to run again by it.
   */
  readonly dueAtMs?: number;
}

/** Where rechecks wait (SQS with `DelaySeconds` on AWS; a timer queue locally and in the explorer). */
export interface RecheckQueue {
  send(rechecks: readonly Recheck[]): Promise<void>;
}

/** The completer's table (`client`, `tableName`, `attributes`: {@link IdempotencyTableOptions}) and what it finishes calls with. */
export interface CompleterOptions extends IdempotencyTableOptions {
  /** The runtime that finishes a call: the same key, fingerprint and downstream key as the first try. */
  readonly runtime: ToolRuntime;
  /** The tools whose calls can be finished, by name. */
  readonly tools: readonly ToolDefinition[];
  /** Delivers rechecks back to {@link Completer.onRecheck} after their delay. */
  readonly queue: RecheckQueue;
  /** @default undefined (nothing is logged) */
  readonly logger?: Logger;
}

/** What one stream batch led to. */
export interface StreamReport {
  /** Stream records in the batch. */
  readonly recordsRead: number;
  /** Call records whose last image in the batch was in flight (not stalled): a recheck each. */
  readonly rechecksScheduled: number;
}

/** What one recheck found and did. */
export type RecheckOutcome =
  /** The call was abandoned; the completer finished it (a receipt, or the call's stored outcome). */
  | 'finished'
  /** Nothing to do: completed, erased, gone, or another claim holds it now (its own changes follow). */
  | 'settled'
  /** Its lock is still live: looked at again when it ends. */
  | 'later'
  /** Abandoned after its runtime's `maxAttempts`: marked `stalled` (on the claim read), not re-run, logged. */
  | 'gave_up'
  /**
   * The re-run did not settle it (a transient failure, perhaps before anything was written): it is
   * rechecked again after a backoff — and if the attempt did change the record, the stream brings
   * that change too (a recheck of a claim that is no longer the record's settles at once).
   */
  | 'unsettled';

/**
 * Finishes abandoned work: a call whose worker died, or whose attempt failed after its claim, leaves
 * an in-flight record; without anyone retrying it, the completer re-runs it through the same runtime —
 * taking over exactly the claim it saw, so an erased or finished record is never brought back — and
 * the provider replays instead of moving money again.
 *
 * How it finds them, by cost: Lambda's event source mapping feeds it the idempotency table's stream
 * ({@link onStream}); a batch is folded to each record's last image, so a call that completed within
 * the batch costs nothing. A call still in flight at the end of a batch becomes one delayed recheck
 * (an SQS message, due when its lock ends); the recheck ({@link onRecheck}) reads the record once and
 * finishes it if it was abandoned. No checkpoint, no scan, nothing written on a call's hot path.
 */
export class Completer {
  readonly #options: CompleterOptions;
  readonly #tools: ReadonlyMap<string, ToolDefinition>;
  readonly #table: IdempotencyTable;

  constructor(options: CompleterOptions) {
    if ('maxAttempts' in options) {
      // Before, a completer's own option: ignored now, it would give up by another number than the answers say.
      throw new TypeError(
        'maxAttempts is the runtime’s (ToolRuntimeOptions.maxAttempts), not the completer’s: set it on the runtime the completer runs calls through',
      );
    }
    this.#options = options;
    this.#tools = new Map(options.tools.map((tool) => [tool.name, tool]));
    this.#table = idempotencyTable(options);
  }

  /**
   * A batch of the stream: every call record whose last image in the batch is in flight gets a
   * recheck when its lock ends (later still after failed attempts). Throws if the queue does: the
   * event source mapping retries the batch (and bisects it), then hands it to its on-failure queue.
   */
  async onStream(changes: readonly StreamChange[]): Promise<StreamReport> {
    const last = new Map<string, { sequence: bigint; image: Record<string, unknown> | undefined }>();
    for (const change of changes) {
      const keys = change.dynamodb?.Keys;
      if (!keys) continue;
      const recordKey = unmarshall(keys as Record<string, AttributeValue>)[this.#table.attributes.key];
      if (typeof recordKey !== 'string' || !isCallRecordKey(recordKey)) continue;
      const sequence = BigInt(change.dynamodb?.SequenceNumber ?? '0');
      const seen = last.get(recordKey);
      if (seen && seen.sequence > sequence) continue;
      const image = change.dynamodb?.NewImage;
      last.set(recordKey, { sequence, image: image ? unmarshall(image as Record<string, AttributeValue>) : undefined });
    }
    const rechecks: Recheck[] = [];
    for (const [recordKey, { image }] of last) {
      const record = image ? callRecordOf(image, this.#table.attributes) : undefined;
      if (record?.status !== STATUS.inProgress || !record.claimId) continue;
      // Given up on already (the image of the give-up itself): nothing more to schedule. Past its TTL: gone
      // for every reader, and never the completer's to finish (rule 2) — a stream read from its start
      // (`retrysafe complete`) holds such images for a day.
      if (record.stalledClaimId === record.claimId || classify(record, Date.now()) === 'expired') continue;
      // Due when the record says (its lock's end, and its attempts' backoff), however late this image is read
      // — looked at before its TTL all the same, to give it up if it cannot be re-run by then.
      const dueAtMs = completerLooksAtMs(record);
      rechecks.push({
        key: recordKey,
        claim: record.claimId,
        delaySeconds: recheckDelaySeconds(dueAtMs, Date.now()),
        dueAtMs,
      });
    }
    if (rechecks.length > 0) await this.#options.queue.send(rechecks);
    return { recordsRead: changes.length, rechecksScheduled: rechecks.length };
  }

  /**
   * One recheck: the record is read (one consistent GetItem); if the claim it names is still the
   * record's and its lock has ended, the call is re-run as its caller would retry it — the same
   * arguments under the same key — taking over only that claim. Past `maxAttempts` it is not re-run:
   * it is marked `stalled` instead (on that claim), once.
   */
  async onRecheck(recheck: Pick<Recheck, 'key' | 'claim'>, deadline: InvocationDeadline): Promise<RecheckOutcome> {
    const record = await readCallRecord(this.#table, recheck.key);
    const nowMs = Date.now();
    const state = classify(record, nowMs);
    if (!record || record.claimId !== recheck.claim || (state !== 'live' && state !== 'abandoned')) return 'settled';
    // Not to be looked at yet — still live, or abandoned before its re-run or its give-up is due (a recheck
    // delivered early, twice, or capped at SQS's 15 min): looked at again when the record says, not when this
    // message came — a give-up too, no sooner than every answer about it said (review 28, F4).
    const lookAtMs = completerLooksAtMs(record);
    if (state === 'live' || nowMs < lookAtMs) {
      const delaySeconds = Math.max(1, recheckDelaySeconds(lookAtMs, nowMs));
      await this.#options.queue.send([{ key: recheck.key, claim: recheck.claim, delaySeconds, dueAtMs: lookAtMs }]);
      return 'later';
    }
    // Abandoned, but its re-run is due within a minute of its last look before its TTL, or past it
    // (`expiresBeforeRerun`: what every answer about it says in advance, by the record alone), or this look
    // came at or past that last look, or no re-run could start by its record's last lock-length (rule 2 would
    // refuse its takeover — a lock over 60 s): given up on now, while the record exists, rather than left to
    // expire unreported (`tooLateToRerun`).
    if (tooLateToRerun(record, nowMs, deadline.getRemainingTimeInMillis())) {
      return this.#giveUp(record, recheck.claim, 'expiring');
    }
    // The record is abandoned on the claim the recheck names: that claim is what is given up on or resumed —
    // given up on after `maxAttempts`, and at once when this completer cannot re-run it (its tool is not one
    // it serves: a deploy dropped or renamed it; its stored call cannot be read): nothing else would move it
    // before its TTL, and its poll says why.
    // Attempts that ran or failed, not those queued (`retriesExhausted`, against the runtime's `maxAttempts`):
    // what every answer about it says in advance too (`givesUpAtNextLook`).
    if (retriesExhausted(record, this.#options.runtime.maxAttempts))
      return this.#giveUp(record, recheck.claim, 'attempts');
    const tool = record.tool === undefined ? undefined : this.#tools.get(record.tool);
    if (!tool) return this.#giveUp(record, recheck.claim, 'unknown_tool');
    if (!record.call || record.tenant === undefined) return this.#giveUp(record, recheck.claim, 'unreadable_call');
    const outcome = await this.#finish(tool, record.tenant, record.call, recheck.claim, deadline);
    if (outcome === 'refused') {
      // Refused before any claim (its stored arguments no longer parse, or fingerprint otherwise, under the
      // tool as deployed now): the record is as it was, and no re-run could move it — given up on at once.
      return this.#giveUp(record, recheck.claim, 'unreadable_call');
    }
    if (outcome === 'unsettled') {
      // Never rely on a change that may not have happened (the takeover itself may have failed): looked at
      // again after this attempt's backoff — when the record says, if the re-run did park it.
      const dueAtMs = completerLooksAtMs({ ...record, lockEndsMs: Date.now(), attempt: record.attempt + 1 });
      const delaySeconds = recheckDelaySeconds(dueAtMs, Date.now());
      await this.#options.queue.send([{ key: recheck.key, claim: recheck.claim, delaySeconds, dueAtMs }]);
    }
    return outcome;
  }

  async #giveUp(record: CallRecord, claimId: string, reason: StalledReason): Promise<RecheckOutcome> {
    const marked = await markStalled(this.#table, record.recordKey, claimId, Date.now(), reason);
    if (marked === 'changed') return 'settled'; // taken over, finished or erased meanwhile: its own changes follow
    this.#options.logger?.error('completer gave up on a call: it is stalled until a retry with its key, or erase', {
      tool: record.tool,
      attempts: record.attempt,
      reason,
    });
    return 'gave_up';
  }

  /** Re-runs the call as its caller would retry it, taking over only `claimId`. */
  async #finish(
    tool: ToolDefinition,
    tenant: string,
    call: StoredCall,
    claimId: string,
    deadline: InvocationDeadline,
  ): Promise<RecheckOutcome | 'refused'> {
    const { result, call: about } = await this.#options.runtime.invokeForCall(
      tool,
      { tenant, user: call.user },
      { ...call.args, idempotency_key: call.clientKey },
      deadline,
      { resume: { claimId }, transport: 'completer' },
    );
    if (result.ok) return 'finished';
    if ('status' in result) return 'unsettled';
    if (result.error.code === 'unavailable') return 'unsettled';
    // An error about no call of these arguments under the key (`invalid_args`, `conflict` before a claim)
    // changed nothing; one the call's attempt ended with is its stored outcome, or its claim was released.
    const refusedBeforeClaim =
      about === undefined && (result.error.code === 'invalid_args' || result.error.code === 'conflict');
    return refusedBeforeClaim ? 'refused' : 'finished';
  }
}
