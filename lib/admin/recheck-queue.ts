import { SendMessageBatchCommand, SQSClient } from '@aws-sdk/client-sqs';
import * as z from 'zod/mini';
import type { Recheck, RecheckQueue } from '../idempotency';
import { fieldProblem } from '../idempotency/definition';

import { RECHECK_QUEUE_URL_VAR } from './recheck-queue-url';

export { RECHECK_QUEUE_URL_VAR };

/** The most entries one `SendMessageBatch` request may carry (an SQS limit). */
const MAX_BATCH_ENTRIES = 10;

/** The longest one SQS request may take: a stream batch that cannot enqueue fails and is retried. */
const REQUEST_TIMEOUT_MS = 5_000;

/** A recheck as it travels through SQS: the record's key and the claim seen in flight, nothing else. */
const recheckMessageSchema = z.strictObject({
  key: z.string().check(z.minLength(1)),
  claim: z.string().check(z.minLength(1)),
});

export type RecheckMessage = Pick<Recheck, 'key' | 'claim'>;

/** The body of a recheck's SQS message: `{"key":…,"claim":…}` (the delay travels as `DelaySeconds`). */
export function recheckMessageBody({ key, claim }: RecheckMessage): string {
  return JSON.stringify({ key, claim });
}

/**
 * The recheck a message body carries, or a `TypeError` naming the field: a malformed message never
 * reaches the completer (it fails, and after its retries lands in the recheck queue's DLQ).
 */
export function parseRecheckMessage(body: string): RecheckMessage {
  let input: unknown;
  try {
    input = JSON.parse(body);
  } catch {
    throw new TypeError('message: expected a JSON object');
  }
  const parsed = recheckMessageSchema.safeParse(input);
  if (parsed.success) return parsed.data;
  throw new TypeError(fieldProblem(parsed.error, 'message'));
}

/** Some rechecks of a batch were refused by SQS: the stream batch that scheduled them must fail. */
export class RecheckQueueError extends Error {
  override readonly name = 'RecheckQueueError';

  constructor(
    /** What SQS answered for each refused entry. */
    readonly failed: ReadonlyArray<{ readonly code?: string; readonly message?: string }>,
    options?: ErrorOptions,
  ) {
    super(
      `SQS refused ${failed.length} recheck(s): ${failed.map((entry) => `${entry.code}: ${entry.message}`).join('; ')}`,
      options,
    );
  }
}

/**
 * The recheck queue on AWS: each recheck is one SQS message, delivered back to the completer after its
 * `DelaySeconds`. Sent `SendMessageBatch` by `SendMessageBatch` (10 entries each); any entry SQS refuses
 * makes {@link send} throw, so the stream batch is retried (and bisected) rather than a call forgotten.
 * An entry sent twice (a retried batch) is harmless: a recheck is a read, and only its exact claim is
 * ever taken over.
 */
export class SqsRecheckQueue implements RecheckQueue {
  constructor(
    /** The SQS client it sends with (the entry point traces it). */
    readonly sqs: SQSClient,
    private readonly queueUrl: string,
  ) {}

  async send(rechecks: readonly Recheck[]): Promise<void> {
    for (let start = 0; start < rechecks.length; start += MAX_BATCH_ENTRIES) {
      const entries = rechecks.slice(start, start + MAX_BATCH_ENTRIES);
      const answer = await this.sqs.send(
        new SendMessageBatchCommand({
          QueueUrl: this.queueUrl,
          Entries: entries.map((recheck, index) => ({
            Id: String(index),
            MessageBody: recheckMessageBody(recheck),
            DelaySeconds: recheck.delaySeconds,
          })),
        }),
      );
      const failed = answer.Failed ?? [];
      if (failed.length > 0) {
        throw new RecheckQueueError(
          failed.map((entry) => ({
            ...(entry.Code === undefined ? {} : { code: entry.Code }),
            ...(entry.Message === undefined ? {} : { message: entry.Message }),
          })),
        );
      }
    }
  }
}

/**
 * The recheck queue the environment names (`RECHECK_QUEUE_URL`, set by the stack), on an SQS client
 * with explicit timeouts like the DynamoDB client's: an unreachable queue fails the batch fast.
 */
export function createSqsRecheckQueue(env: NodeJS.ProcessEnv = process.env): SqsRecheckQueue {
  const queueUrl = env[RECHECK_QUEUE_URL_VAR];
  if (!queueUrl) throw new Error(`${RECHECK_QUEUE_URL_VAR} is not set: the completer has no recheck queue`);
  const sqs = new SQSClient({
    requestHandler: { connectionTimeout: 1_000, requestTimeout: REQUEST_TIMEOUT_MS, throwOnRequestTimeout: true },
  });
  return new SqsRecheckQueue(sqs, queueUrl);
}
