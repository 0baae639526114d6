import type { Logger } from '@aws-lambda-powertools/logger';
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { DynamoDBRecord, SQSRecord } from 'aws-lambda';
import {
  Completer,
  type InvocationDeadline,
  type RecheckOutcome,
  type RecheckQueue,
  type StreamReport,
  type ToolRuntime,
} from '../idempotency';
import type { CompleterFigures } from '../observability/names';
import { idempotencyTableName } from '../store/tables';
import type { ToolModule } from '../tools/tool-module';
import { parseRecheckMessage } from './recheck-queue';

/**
 * What the completer is built from: the process's services (the DynamoDB client and logger, and what the
 * tools are bound to), its runtime, the app's tools, its queue.
 */
export interface CompleterComposition<Svc> {
  readonly services: Svc & { readonly client: DynamoDBClient; readonly logger: Logger };
  readonly runtime: ToolRuntime;
  // biome-ignore lint/suspicious/noExplicitAny: tools of every schema and receipt, bound to the same services
  readonly tools: readonly ToolModule<string, any, any, Svc>[];
  /** Where rechecks wait: SQS on AWS (`SqsRecheckQueue`), in memory locally (`LocalRecheckQueue`). */
  readonly queue: RecheckQueue;
}

/** The completer over this app's idempotency table, able to finish a call of any of the app's tools. */
export function createCompleter<Svc>(
  { services, runtime, tools, queue }: CompleterComposition<Svc>,
  env: NodeJS.ProcessEnv = process.env,
): Completer {
  return new Completer({
    client: services.client,
    runtime,
    tools: tools.map((tool) => tool.bind(services)),
    queue,
    tableName: idempotencyTableName(env),
    logger: services.logger,
  });
}

/** What triggered the completer: a batch of the idempotency table's stream, or of the recheck queue. */
export type CompleterTrigger =
  | { readonly source: 'stream'; readonly records: readonly DynamoDBRecord[] }
  | { readonly source: 'rechecks'; readonly records: readonly SQSRecord[] };

/**
 * Which of its two event source mappings invoked the completer, from the records' `eventSource`; any
 * other event (a direct invoke, a mixed batch) is refused rather than guessed at.
 */
export function completerTrigger(event: unknown): CompleterTrigger {
  const records = (event as { Records?: unknown } | null)?.Records;
  if (Array.isArray(records) && records.length > 0) {
    const sources = new Set(records.map((record) => (record as { eventSource?: unknown } | null)?.eventSource));
    if (sources.size === 1 && sources.has('aws:dynamodb')) return { source: 'stream', records };
    if (sources.size === 1 && sources.has('aws:sqs')) return { source: 'rechecks', records };
  }
  throw new TypeError('event: expected a batch of DynamoDB stream records or of SQS messages');
}

/** One delivered recheck message: SQS's id for it and its body. */
export interface RecheckDelivery {
  readonly messageId: string;
  readonly body: string;
}

/** What a batch of recheck messages led to: a count per outcome, and the messages to deliver again. */
export interface RecheckBatchReport {
  readonly outcomes: Readonly<Record<RecheckOutcome, number>>;
  /** Messages that threw (malformed, or the store failed): SQS delivers them again, then to its DLQ. */
  readonly failedMessageIds: readonly string[];
}

/**
 * Runs every recheck of a delivered batch, side by side, each bounded by the invocation's deadline. A
 * message that throws is reported (and logged), not rethrown: the others are done, and only it comes
 * back (SQS partial batch response).
 */
export async function recheckBatch(
  completer: Pick<Completer, 'onRecheck'>,
  deliveries: readonly RecheckDelivery[],
  deadline: InvocationDeadline,
  logger?: Logger,
): Promise<RecheckBatchReport> {
  const outcomes: Record<RecheckOutcome, number> = { finished: 0, settled: 0, later: 0, unsettled: 0, gave_up: 0 };
  const failedMessageIds: string[] = [];
  const settled = await Promise.allSettled(
    deliveries.map(async function recheckOne(delivery) {
      return completer.onRecheck(parseRecheckMessage(delivery.body), deadline);
    }),
  );
  settled.forEach((result, index) => {
    if (result.status === 'fulfilled') {
      outcomes[result.value] += 1;
      return;
    }
    failedMessageIds.push(deliveries[index]!.messageId);
    logger?.warn('recheck failed: SQS delivers it again', {
      messageId: deliveries[index]!.messageId,
      error: result.reason as Error,
    });
  });
  return { outcomes, failedMessageIds };
}

/** The metric figures of one stream batch. */
export function streamFigures(report: StreamReport): CompleterFigures {
  return { rechecksScheduled: report.rechecksScheduled, callsFinished: 0, rechecksFailed: 0, gaveUp: 0 };
}

/** The metric figures of one batch of rechecks: a recheck answered `later` scheduled another. */
export function recheckFigures(report: RecheckBatchReport): CompleterFigures {
  return {
    rechecksScheduled: report.outcomes.later,
    callsFinished: report.outcomes.finished,
    rechecksFailed: report.failedMessageIds.length,
    gaveUp: report.outcomes.gave_up,
  };
}
