import type { Logger } from '@aws-lambda-powertools/logger';
import { type RecheckBatchReport, recheckBatch, recheckFigures } from '../admin/completer';
import { recheckMessageBody } from '../admin/recheck-queue';
import type { Completer, InvocationDeadline } from '../idempotency';
import type { CompleterFigures } from '../observability/names';
import { withInvocationDeadline } from '../store/deadline';
import type { LocalRecheckQueue } from './recheck-queue';
import type { LocalStreamFeed } from './stream-feed';

/** What one local pass did: the stream batches it fed, then the rechecks that were due. */
export interface CompleterPassReport {
  /** Stream records handed to `onStream`. */
  readonly recordsRead: number;
  /** Rechecks the stream batches scheduled. */
  readonly rechecksScheduled: number;
  /** Calls given up on past the completer's attempts (now `stalled`: left for a retry with their key). */
  readonly gaveUp: number;
  /** The due rechecks delivered, by outcome, and those that failed (delivered again later). */
  readonly rechecks: RecheckBatchReport;
  /** The pass's counts, as the Lambda's invocations record them. */
  readonly figures: CompleterFigures;
}

export interface CompleterPassOptions {
  /** @default undefined (failed rechecks are not logged) */
  readonly logger?: Logger;
}

/**
 * One pass of the completer as the stack triggers it, for `npm start` and `npm run complete`: the
 * stream's new records into `onStream` (what the event source mapping does), then every recheck that
 * is due through the same batch function the Lambda runs on an SQS batch — message bodies included —
 * deleting each one handled, so a failed one comes again when its visibility ends, as SQS does. The
 * whole pass is bounded by `deadline`, like one invocation.
 */
export function completerPass(
  completer: Completer,
  feed: LocalStreamFeed,
  queue: LocalRecheckQueue,
  deadline: InvocationDeadline,
  options: CompleterPassOptions = {},
): Promise<CompleterPassReport> {
  return withInvocationDeadline(deadline, async function pass() {
    let rechecksScheduled = 0;
    const recordsRead = await feed.poll(async function toCompleter(records) {
      const report = await completer.onStream(records);
      rechecksScheduled += report.rechecksScheduled;
    });
    // Received, not removed: a recheck is deleted once its handling ended, so one that failed — or whose
    // pass threw or never came back — is delivered again when its visibility ends, as SQS does.
    const received = queue.receive();
    const rechecks = await recheckBatch(
      completer,
      received.map((delivery) => ({ messageId: delivery.receipt, body: recheckMessageBody(delivery.recheck) })),
      deadline,
      options.logger,
    );
    const failed = new Set(rechecks.failedMessageIds);
    for (const { receipt } of received) if (!failed.has(receipt)) queue.delete(receipt);
    const delivered = recheckFigures(rechecks);
    const figures = { ...delivered, rechecksScheduled: rechecksScheduled + delivered.rechecksScheduled };
    return { recordsRead, rechecksScheduled, gaveUp: delivered.gaveUp, rechecks, figures };
  });
}
