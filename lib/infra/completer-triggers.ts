import { Duration, Validations } from 'aws-cdk-lib';
import type * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import { DynamoEventSource, SqsDlq, SqsEventSource } from 'aws-cdk-lib/aws-lambda-event-sources';
import * as sqs from 'aws-cdk-lib/aws-sqs';
import { Construct } from 'constructs';
import { RECHECK_QUEUE_URL_VAR } from '../admin/recheck-queue-url';
import { COMPLETER_DEFAULTS } from './defaults';

export interface CompleterTriggersProps {
  /** The completer: `lambdas/complete.ts`, which handles both triggers. */
  readonly completer: lambda.Function;
  /** The idempotency table, with its stream (NEW_IMAGE). */
  readonly table: dynamodb.ITable;
}

/**
 * What sets the completer off, and where what it could not do goes:
 *
 * ```
 * idempotency table ──stream──▶ event source mapping ──batch (≤ 10 s)──▶ completer.onStream
 *                                      │ retries spent (bisected)            │ call in flight
 *                                      ▼                                     ▼
 *                             stream-failures queue (alarm)          recheck queue (DelaySeconds)
 *                                                                            │ due
 *                                                  completer.onRecheck ◀─────┘
 *                                                        │ failed 5 times
 *                                                        ▼
 *                                              recheck DLQ (alarm)
 * ```
 *
 * The queues are encrypted (SQS-managed keys) and refuse requests without TLS. The completer gets the
 * recheck queue's URL and may send to it; each event source adds the consuming grants it needs.
 */
export class CompleterTriggers extends Construct {
  /** Delayed rechecks of calls in flight at the end of a stream batch. */
  public readonly rechecks: sqs.Queue;
  /** Rechecks that failed `recheckMaxReceiveCount` times. */
  public readonly recheckDeadLetters: sqs.Queue;
  /** The stream mapping's on-failure destination: batches whose retries were spent (their metadata). */
  public readonly streamFailures: sqs.Queue;
  /** The idempotency table's stream → the completer. */
  public readonly streamSource: DynamoEventSource;
  /** The recheck queue → the completer. */
  public readonly recheckSource: SqsEventSource;

  constructor(scope: Construct, id: string, props: CompleterTriggersProps) {
    super(scope, id);
    const retentionPeriod = Duration.days(COMPLETER_DEFAULTS.failedRetentionDays);
    const secured = { encryption: sqs.QueueEncryption.SQS_MANAGED, enforceSSL: true } as const;

    this.recheckDeadLetters = new sqs.Queue(this, 'RecheckDeadLetters', { ...secured, retentionPeriod });
    this.rechecks = new sqs.Queue(this, 'Rechecks', {
      ...secured,
      // AWS's advice for a queue a Lambda consumes: at least six times the function's timeout, so a
      // message is not delivered again while Lambda may still be retrying a throttled batch with it.
      visibilityTimeout: Duration.seconds(
        COMPLETER_DEFAULTS.timeoutSeconds * COMPLETER_DEFAULTS.recheckVisibilityTimeoutFactor,
      ),
      deadLetterQueue: { queue: this.recheckDeadLetters, maxReceiveCount: COMPLETER_DEFAULTS.recheckMaxReceiveCount },
    });
    this.streamFailures = new sqs.Queue(this, 'StreamFailures', { ...secured, retentionPeriod });
    Validations.of(this.streamFailures).acknowledge({
      id: 'AwsSolutions-SQS3',
      reason:
        "The stream mapping's on-failure destination is itself the last stop (what no retry could do); an operator reads it, alarmed on its first message.",
    });

    props.completer.addEnvironment(RECHECK_QUEUE_URL_VAR, this.rechecks.queueUrl);
    this.rechecks.grantSendMessages(props.completer);
    this.streamSource = new DynamoEventSource(props.table, {
      startingPosition: lambda.StartingPosition.TRIM_HORIZON,
      batchSize: COMPLETER_DEFAULTS.streamBatchSize,
      maxBatchingWindow: Duration.seconds(COMPLETER_DEFAULTS.streamBatchingWindowSeconds),
      bisectBatchOnError: true,
      retryAttempts: COMPLETER_DEFAULTS.streamRetryAttempts,
      // The handler fails a stream batch as a whole (it only enqueues): no partial batch response.
      reportBatchItemFailures: false,
      onFailure: new SqsDlq(this.streamFailures),
    });
    this.recheckSource = new SqsEventSource(this.rechecks, {
      batchSize: COMPLETER_DEFAULTS.recheckBatchSize,
      reportBatchItemFailures: true,
    });
    props.completer.addEventSource(this.streamSource);
    props.completer.addEventSource(this.recheckSource);
  }
}
