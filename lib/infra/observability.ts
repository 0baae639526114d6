import { Duration } from 'aws-cdk-lib';
import * as cloudwatch from 'aws-cdk-lib/aws-cloudwatch';
import { SnsAction } from 'aws-cdk-lib/aws-cloudwatch-actions';
import type * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import type * as lambda from 'aws-cdk-lib/aws-lambda';
import type * as sns from 'aws-cdk-lib/aws-sns';
import type * as sqs from 'aws-cdk-lib/aws-sqs';
import { Construct } from 'constructs';
import { COMPLETER_METRICS, METRICS_NAMESPACE, OUTCOME_LABELS, type OutcomeLabel } from '../observability/names';
import { ALARM_DEFAULTS } from './defaults';

export interface ObservabilityProps {
  /** The tools whose calls are counted (their names are the metrics' `tool` dimension). */
  readonly toolNames: readonly string[];
  /** Every function of the stack: errors and throttles alarm. */
  readonly functions: Readonly<Record<string, lambda.IFunction>>;
  /** The completer: a failed invocation alarms on its own. */
  readonly completer: lambda.IFunction;
  /** The completer's failure queues: a message in either alarms. */
  readonly completerQueues: {
    /** The stream mapping's on-failure destination. */
    readonly streamFailures: sqs.IQueue;
    /** The recheck queue's DLQ. */
    readonly recheckDeadLetters: sqs.IQueue;
  };
  /** Every table: throttled requests and system errors alarm. */
  readonly tables: Readonly<Record<string, dynamodb.ITable>>;
  /** The `service` dimension the functions write their metrics under. */
  readonly serviceName: string;
  /**
   * An SNS topic every alarm notifies.
   * @default undefined (alarms are created without an action)
   */
  readonly alarmTopic?: sns.ITopic;
}

/**
 * What a team running retrysafe watches: alarms on `internal` answers, the `unavailable` rate, Lambda
 * errors and throttles, DynamoDB throttles and system errors, and the completer — failed invocations, a
 * message in its stream-failures queue or its recheck DLQ, a call it gave up on — all to one SNS topic —
 * and a dashboard of the outcome mix per tool, latency p50/p99, replays and pending.
 */
export class Observability extends Construct {
  public readonly alarms: cloudwatch.Alarm[] = [];
  public readonly dashboard: cloudwatch.Dashboard;
  readonly #props: ObservabilityProps;

  constructor(scope: Construct, id: string, props: ObservabilityProps) {
    super(scope, id);
    this.#props = props;
    const topic = props.alarmTopic;
    const alarm = (alarmId: string, options: cloudwatch.CreateAlarmOptions, metric: cloudwatch.IMetric) => {
      const created = new cloudwatch.Alarm(this, alarmId, {
        metric,
        treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
        ...options,
      });
      if (topic) created.addAlarmAction(new SnsAction(topic));
      this.alarms.push(created);
    };

    for (const tool of props.toolNames) {
      alarm(
        `${tool}Internal`,
        {
          alarmDescription: `${tool}: an internal error (a bug or a deployment mistake), see the function's log`,
          threshold: 1,
          evaluationPeriods: 1,
          comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
        },
        this.#calls(tool, 'internal'),
      );
      alarm(
        `${tool}UnavailableRate`,
        {
          alarmDescription: `${tool}: over ${ALARM_DEFAULTS.unavailablePercent} % of calls answered unavailable (a store outage)`,
          threshold: ALARM_DEFAULTS.unavailablePercent,
          evaluationPeriods: 3,
          comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
        },
        new cloudwatch.MathExpression({
          label: `${tool} unavailable %`,
          expression: '100 * FILL(unavailable, 0) / MAX([total, 1])',
          usingMetrics: { unavailable: this.#calls(tool, 'unavailable'), total: this.#total(tool) },
          period: Duration.minutes(5),
        }),
      );
    }
    for (const [name, fn] of Object.entries(props.functions)) {
      alarm(`${name}Errors`, { threshold: 1, evaluationPeriods: 1 }, fn.metricErrors({ period: Duration.minutes(5) }));
      alarm(
        `${name}Throttles`,
        { threshold: 1, evaluationPeriods: 1 },
        fn.metricThrottles({ period: Duration.minutes(5) }),
      );
    }
    alarm(
      'CompleterFailures',
      {
        alarmDescription:
          'completer invocations failed over 10 minutes: stream batches are being retried, abandoned calls wait',
        threshold: 1,
        evaluationPeriods: 2,
      },
      props.completer.metricErrors({ period: Duration.minutes(5) }),
    );
    const visible = { threshold: 1, evaluationPeriods: 1 } as const;
    alarm(
      'CompleterStreamFailures',
      {
        ...visible,
        alarmDescription:
          "a stream batch failed every retry: its calls in flight got no recheck (a retry with their key still finishes them); the message names the batch's shard and sequence numbers",
      },
      props.completerQueues.streamFailures.metricApproximateNumberOfMessagesVisible({
        period: Duration.minutes(5),
        statistic: 'Maximum',
      }),
    );
    alarm(
      'CompleterRecheckDeadLetters',
      {
        ...visible,
        alarmDescription:
          'a recheck failed on every delivery (malformed, or its call could not be finished): see the message and the completer log',
      },
      props.completerQueues.recheckDeadLetters.metricApproximateNumberOfMessagesVisible({
        period: Duration.minutes(5),
        statistic: 'Maximum',
      }),
    );
    alarm(
      'CompleterGaveUp',
      {
        threshold: 1,
        evaluationPeriods: 1,
        comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
        alarmDescription:
          'the completer gave up on a call after its attempts: it stays abandoned until a retry with its key (see the completer log)',
      },
      new cloudwatch.Metric({
        namespace: METRICS_NAMESPACE,
        metricName: COMPLETER_METRICS.gaveUp,
        dimensionsMap: { service: props.serviceName },
        statistic: 'Sum',
        period: Duration.minutes(5),
      }),
    );
    for (const [name, table] of Object.entries(props.tables)) {
      const operations = ['GetItem', 'PutItem', 'UpdateItem', 'DeleteItem', 'Query', 'Scan'] as dynamodb.Operation[];
      alarm(
        `${name}Throttled`,
        { threshold: 1, evaluationPeriods: 1 },
        table.metricThrottledRequestsForOperations({ operations, period: Duration.minutes(5) }),
      );
      alarm(
        `${name}SystemErrors`,
        { threshold: 1, evaluationPeriods: 1 },
        table.metricSystemErrorsForOperations({ operations, period: Duration.minutes(5) }),
      );
    }

    this.dashboard = new cloudwatch.Dashboard(this, 'Dashboard', { dashboardName: `${props.serviceName}-calls` });
    for (const tool of props.toolNames) {
      this.dashboard.addWidgets(
        new cloudwatch.GraphWidget({
          title: `${tool}: outcome mix`,
          stacked: true,
          left: OUTCOME_LABELS.map((outcome) => this.#calls(tool, outcome)),
          width: 8,
        }),
        new cloudwatch.GraphWidget({
          title: `${tool}: latency p50 / p99 (executed)`,
          left: ['p50', 'p99'].map((statistic) => this.#latency(tool, statistic)),
          width: 8,
        }),
        new cloudwatch.GraphWidget({
          title: `${tool}: replays and pending`,
          left: [
            this.#calls(tool, 'replayed_client_key'),
            this.#calls(tool, 'replayed_natural_key'),
            this.#calls(tool, 'replayed_dedupe_window'),
            this.#calls(tool, 'pending'),
          ],
          width: 8,
        }),
      );
    }
  }

  /** Calls of one tool with one outcome, summed over 5 minutes. */
  #calls(tool: string, outcome: OutcomeLabel): cloudwatch.Metric {
    return new cloudwatch.Metric({
      namespace: METRICS_NAMESPACE,
      metricName: 'calls',
      dimensionsMap: { service: this.#props.serviceName, tool, outcome },
      statistic: 'Sum',
      period: Duration.minutes(5),
      label: outcome,
    });
  }

  /**
   * Every call of one tool answered by its function: the sum over the outcomes but `timeout` (a call that
   * outlived its invocation). An alarm's math may read at most 10 metrics: the 10 other outcomes.
   */
  #total(tool: string): cloudwatch.MathExpression {
    const answered = OUTCOME_LABELS.filter((outcome) => outcome !== 'timeout');
    const metrics = Object.fromEntries(answered.map((outcome, i) => [`o${i}`, this.#calls(tool, outcome)]));
    return new cloudwatch.MathExpression({
      label: `${tool} calls`,
      expression: Object.keys(metrics)
        .map((id) => `FILL(${id}, 0)`)
        .join(' + '),
      usingMetrics: metrics,
      period: Duration.minutes(5),
    });
  }

  #latency(tool: string, statistic: string): cloudwatch.Metric {
    return new cloudwatch.Metric({
      namespace: METRICS_NAMESPACE,
      metricName: 'latency',
      dimensionsMap: { service: this.#props.serviceName, tool, outcome: 'executed' },
      statistic,
      period: Duration.minutes(5),
      label: statistic,
    });
  }
}
