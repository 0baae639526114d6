import { randomUUID } from 'node:crypto';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type DynamoDBClient, PutItemCommand } from '@aws-sdk/client-dynamodb';
import { marshall } from '@aws-sdk/util-dynamodb';
import { App, Validations } from 'aws-cdk-lib';
import { Match, Template } from 'aws-cdk-lib/assertions';
import { AwsSolutionsChecks } from 'cdk-nag';
import { RetrysafeStack, type RetrysafeStackOptions } from '../../app/stack';
import { TABLES, type TableId, tableName } from '../../app/tables';
import { TOOLS } from '../../app/tools';
import { eraseTenant } from '../../lib/admin/erase-tenant';
import type { EntryName } from '../../lib/api/routes';
import { POWERTOOLS_LAYER } from '../../lib/infra/defaults';
import { CLAIM_ACTIONS } from '../../lib/infra/idempotency-table';
import { createCompleterMetrics } from '../../lib/observability/metrics';
import type { AnyToolModule } from '../../lib/tools/tool-module';
import { FIXTURE_ENTRY_DIR, TOOLS_WITH_FIXTURE } from '../fixtures/registry';
import { ACCESS_EXERCISES } from '../helpers/access-exercises';
import { type CompleterAccess, observeCompleterAccess } from '../helpers/completer-access';
import { type ObservedAccess, observeAccess } from '../helpers/observed-access';
import { ownIdempotencyTable } from '../helpers/own-table';
import { createWorld, deadline, newTenant } from '../helpers/world';
import { bundleBudgetOf, entriesFor } from './entries';
import { withoutBundlingProgress } from './quiet-bundling';

// biome-ignore lint/suspicious/noExplicitAny: CloudFormation properties are asserted structurally
type Resources = Record<string, { Type: string; Properties: Record<string, any>; DeletionPolicy?: string }>;

/**
 * The stack as `cdk synth` builds it (bundles included), with cdk-nag's AwsSolutions pack. `bundled:
 * false` skips esbuild (cdk's own `bundling-stacks` context), for what a test reads off the template
 * alone: each bundled synthesis costs ~10 s.
 */
function synthesize<T extends AnyToolModule>(props: RetrysafeStackOptions<T> = {}, { bundled = true } = {}) {
  const app = new App({
    outdir: mkdtempSync(join(tmpdir(), 'retrysafe-cdk-')),
    ...(bundled ? {} : { context: { 'aws:cdk:bundling-stacks': [] } }),
  });
  outdir = app.outdir;
  const stack = withoutBundlingProgress(
    () =>
      new RetrysafeStack<T>(app, 'Retrysafe', {
        issuer: 'https://cognito-idp.eu-west-1.amazonaws.com/eu-west-1_example',
        audience: 'client-123',
        ...props,
      }),
  );
  Validations.of(app).addPlugins(new AwsSolutionsChecks(app));
  return { app, stack, template: Template.fromStack(stack) };
}

/** Where the last synthesis wrote its assets (content-addressed: every synthesis writes the same). */
let outdir: string;
let stack: RetrysafeStack;
let template: Template;
let resources: Resources;
/** What each entry point's code really sends, per table, recorded on DynamoDB Local (fixture tool included). */
let observed: Record<string, ObservedAccess>;
/** What the deployed completer sent while finishing an abandoned call of every tool on DynamoDB Local. */
let completerObserved: CompleterAccess;
/** Where the default synthesis wrote its assets (later syntheses with other props write elsewhere). */
let defaultOutdir: string;
beforeAll(async () => {
  ({ stack, template } = synthesize());
  defaultOutdir = outdir;
  resources = template.toJSON().Resources as Resources;
  observed = await observeAccess(TOOLS_WITH_FIXTURE, ACCESS_EXERCISES);
  completerObserved = await observeCompleterAccess();
  // A bundled synthesis and two rounds on DynamoDB Local, with half the CPU: on CI's two cores the other
  // Jest worker starts test/explore/engine.test.ts beside it (the two largest files go first).
}, 240_000);

function logicalId(construct: { node: { defaultChild?: unknown } }, of: RetrysafeStack<AnyToolModule> = stack): string {
  return of.getLogicalId(construct.node.defaultChild as never);
}

/** Every IAM statement attached to a function's role, as { actions, resources } with logical ids. */
function statementsOf(
  functionName: string,
  of: RetrysafeStack<AnyToolModule> = stack,
  ofResources: Resources = resources,
): Array<{ actions: string[]; resources: string[] }> {
  const functions = { ...of.functions, complete: of.completer, erase: of.eraser } as Record<string, { role?: unknown }>;
  const role = functions[functionName]!.role as {
    node: { defaultChild?: unknown };
  };
  const roleId = of.getLogicalId(role.node.defaultChild as never);
  return Object.values(ofResources)
    .filter(
      (r) => r.Type === 'AWS::IAM::Policy' && r.Properties.Roles.some((ref: { Ref: string }) => ref.Ref === roleId),
    )
    .flatMap((policy) => policy.Properties.PolicyDocument.Statement)
    .map((statement: { Action: string | string[]; Resource: unknown }) => ({
      actions: [statement.Action].flat().sort(),
      resources: [statement.Resource].flat().map((resource) => JSON.stringify(resource)),
    }));
}

/** The DynamoDB actions a function may send, per table id, as the synthesized IAM policies grant them. */
function dynamoAccessOf(
  functionName: string,
  of: RetrysafeStack<AnyToolModule> = stack,
  ofResources: Resources = resources,
): Partial<Record<TableId | 'idempotency', string[]>> {
  const tables = { idempotency: of.idempotencyTable.table, ...of.tables };
  const access: Partial<Record<TableId | 'idempotency', string[]>> = {};
  for (const { actions, resources: arns } of statementsOf(functionName, of, ofResources)) {
    for (const [name, table] of Object.entries(tables) as Array<
      [TableId | 'idempotency', typeof of.idempotencyTable.table]
    >) {
      // Table ARNs only: the stream (`StreamArn`) is checked on its own.
      if (arns.some((arn) => arn.includes(`"${logicalId(table, of)}"`) && !arn.includes('"StreamArn"'))) {
        access[name] = [...(access[name] ?? []), ...actions.filter((a) => a.startsWith('dynamodb:'))].sort();
      }
    }
  }
  return access;
}

/**
 * The grants must be what the code sends: the same tables, and on each domain table exactly the
 * actions recorded. On the idempotency table, the runtime's claim lifecycle may also read (a refused claim
 * whose record vanished) and release (a business error), so those functions hold CLAIM_ACTIONS,
 * a superset of what one exercise records.
 */
function expectGrantsMatchObserved(
  granted: Partial<Record<TableId | 'idempotency', string[]>>,
  sent: ObservedAccess,
): void {
  expect(Object.keys(granted).sort()).toEqual(Object.keys(sent).sort());
  for (const [table, actions] of Object.entries(granted) as Array<[TableId | 'idempotency', string[]]>) {
    if (table === 'idempotency' && actions.length > 1) {
      expect(actions).toEqual([...CLAIM_ACTIONS].sort());
      expect(actions).toEqual(expect.arrayContaining(sent[table]!));
    } else {
      expect(actions).toEqual(sent[table]);
    }
  }
}

describe('the idempotency table', () => {
  it('keys records by a hash-spread id, with TTL on expiration, PITR, encryption, on demand, retained, no index', () => {
    template.hasResource('AWS::DynamoDB::Table', {
      DeletionPolicy: 'Retain',
      Properties: Match.objectLike({
        KeySchema: [{ AttributeName: 'id', KeyType: 'HASH' }],
        TimeToLiveSpecification: { AttributeName: 'expiration', Enabled: true },
        PointInTimeRecoverySpecification: { PointInTimeRecoveryEnabled: true },
        BillingMode: 'PAY_PER_REQUEST',
        SSESpecification: { SSEEnabled: true },
        // No index: a claim costs 2 write units, not 3 (tenant erase scans instead, a few times a year).
        GlobalSecondaryIndexes: Match.absent(),
      }),
    });
  });

  it('keeps every domain table too: PITR, on demand, retained, deletion-protected', () => {
    const tables = Object.values(resources).filter((r) => r.Type === 'AWS::DynamoDB::Table');

    expect(tables).toHaveLength(5);
    for (const table of tables) {
      expect(table.DeletionPolicy).toBe('Retain');
      expect(table.Properties.DeletionProtectionEnabled).toBe(true);
      expect(table.Properties.PointInTimeRecoverySpecification).toEqual({ PointInTimeRecoveryEnabled: true });
      expect(table.Properties.BillingMode).toBe('PAY_PER_REQUEST');
    }
  });

  it('deletes the tables with the stack only when asked', () => {
    const { template: destroying } = synthesize({ destroyTablesOnRemoval: true }, { bundled: false });

    const tables = Object.values(destroying.toJSON().Resources as Resources).filter(
      (r) => r.Type === 'AWS::DynamoDB::Table',
    );
    expect(tables.map((t) => t.DeletionPolicy)).toEqual(Array(5).fill('Delete'));
    // A protected table would make the stack's deletion fail.
    expect(tables.map((t) => t.Properties.DeletionProtectionEnabled)).toEqual(Array(5).fill(false));
  }, 120_000);

  it('turns deletion protection off when asked (bin/app.ts: -c deletionProtection=false), the tables still retained', () => {
    const { template: throwaway } = synthesize({ tableDeletionProtection: false }, { bundled: false });

    const tables = Object.values(throwaway.toJSON().Resources as Resources).filter(
      (r) => r.Type === 'AWS::DynamoDB::Table',
    );
    expect(tables.map((t) => t.Properties.DeletionProtectionEnabled)).toEqual(Array(5).fill(false));
    expect(tables.map((t) => t.DeletionPolicy)).toEqual(Array(5).fill('Retain'));
  }, 120_000);
});

describe('the functions', () => {
  it('runs every function on Node.js 24 (the current LTS runtime), arm64, with the table names and the tenant claim', () => {
    const functions = Object.values(resources).filter((r) => r.Type === 'AWS::Lambda::Function');

    expect(functions).toHaveLength(Object.keys(entriesFor(TOOLS)).length + 2); // + the completer and erase
    for (const fn of functions) {
      expect(fn.Properties).toMatchObject({
        Runtime: 'nodejs24.x',
        Architectures: ['arm64'],
        Environment: {
          Variables: expect.objectContaining({
            IDEMPOTENCY_TABLE: { Ref: logicalId(stack.idempotencyTable.table) },
            INVOICES_TABLE: { Ref: logicalId(stack.tables.invoices) },
            TENANT_CLAIM: 'tenant_id',
            POWERTOOLS_SERVICE_NAME: 'retrysafe',
          }),
        },
      });
    }
  });

  it('gives each function its own log group with a retention', () => {
    for (const fn of Object.values(stack.functions)) {
      const properties = resources[logicalId(fn)]!.Properties;
      const logGroup = resources[properties.LoggingConfig.LogGroup.Ref]!;
      expect(logGroup.Type).toBe('AWS::Logs::LogGroup');
      expect(logGroup.Properties.RetentionInDays).toBe(30);
    }
  });

  it.each(Object.keys(entriesFor(TOOLS)))(
    'grants %s exactly the DynamoDB actions its code sends on DynamoDB Local, on exactly its tables',
    (name) => {
      expectGrantsMatchObserved(dynamoAccessOf(name), observed[name]!);
    },
  );

  it('grants nothing but DynamoDB on those tables, writing to its own log group, and sending its traces', () => {
    for (const [name, fn] of Object.entries(stack.functions)) {
      const logGroupId = resources[logicalId(fn)]!.Properties.LoggingConfig.LogGroup.Ref;
      for (const { actions, resources: arns } of statementsOf(name)) {
        if (actions.every((a) => a.startsWith('logs:'))) {
          expect(actions).toEqual(['logs:CreateLogStream', 'logs:PutLogEvents']);
          expect(arns).toEqual([JSON.stringify({ 'Fn::GetAtt': [logGroupId, 'Arn'] })]);
        } else if (actions.every((a) => a.startsWith('xray:'))) {
          // X-Ray has no resource-level permissions: the one wildcard, acknowledged in cdk-nag.
          expect(actions).toEqual(['xray:PutTelemetryRecords', 'xray:PutTraceSegments']);
          expect(arns).toEqual([JSON.stringify('*')]);
        } else {
          expect(actions.every((a) => a.startsWith('dynamodb:'))).toBe(true);
          expect(arns.every((arn) => arn.includes('"Arn"') && !arn.includes('*'))).toBe(true);
        }
      }
    }
  });

  it('attaches no managed policy to any function role', () => {
    for (const fn of Object.values(stack.functions)) {
      expect(
        resources[stack.getLogicalId(fn.role!.node.defaultChild as never)]!.Properties.ManagedPolicyArns,
      ).toBeUndefined();
    }
  });
});

describe('the completer', () => {
  it('is fed by the idempotency table’s stream: from the trim horizon, batched 10 s, bisected, retried 10 times, then to its on-failure queue', () => {
    const mappings = Object.values(resources).filter(
      (r) =>
        r.Type === 'AWS::Lambda::EventSourceMapping' &&
        JSON.stringify(r.Properties.EventSourceArn).includes('"StreamArn"'),
    );

    expect(mappings).toHaveLength(1);
    expect(mappings[0]!.Properties).toEqual({
      EventSourceArn: { 'Fn::GetAtt': [logicalId(stack.idempotencyTable.table), 'StreamArn'] },
      FunctionName: { Ref: logicalId(stack.completer) },
      StartingPosition: 'TRIM_HORIZON',
      BatchSize: 100,
      MaximumBatchingWindowInSeconds: 10,
      BisectBatchOnFunctionError: true,
      MaximumRetryAttempts: 10,
      // The handler fails a stream batch as a whole: no partial batch response is asked for.
      DestinationConfig: {
        OnFailure: { Destination: { 'Fn::GetAtt': [logicalId(stack.completerTriggers.streamFailures), 'Arn'] } },
      },
    });
    template.hasResourceProperties('AWS::DynamoDB::Table', {
      KeySchema: [{ AttributeName: 'id', KeyType: 'HASH' }],
      StreamSpecification: { StreamViewType: 'NEW_IMAGE' },
    });
  });

  it('is fed by its recheck queue: 5 at a time, with partial batch responses; a recheck failing 5 times goes to a DLQ', () => {
    const rechecks = resources[logicalId(stack.completerTriggers.rechecks)]!;
    const completer = resources[logicalId(stack.completer)]!;

    template.hasResourceProperties('AWS::Lambda::EventSourceMapping', {
      EventSourceArn: { 'Fn::GetAtt': [logicalId(stack.completerTriggers.rechecks), 'Arn'] },
      FunctionName: { Ref: logicalId(stack.completer) },
      BatchSize: 5,
      FunctionResponseTypes: ['ReportBatchItemFailures'],
    });
    expect(rechecks.Properties.RedrivePolicy).toEqual({
      deadLetterTargetArn: { 'Fn::GetAtt': [logicalId(stack.completerTriggers.recheckDeadLetters), 'Arn'] },
      maxReceiveCount: 5,
    });
    // AWS's advice for a queue a function consumes: a visibility timeout of at least six function timeouts.
    expect(rechecks.Properties.VisibilityTimeout).toBeGreaterThanOrEqual(6 * completer.Properties.Timeout);
    expect(completer.Properties.Environment.Variables.RECHECK_QUEUE_URL).toEqual({
      Ref: logicalId(stack.completerTriggers.rechecks),
    });
  });

  it('runs on no schedule and with no reserved concurrency: its triggers start it, as many at a time as they need', () => {
    const completer = resources[logicalId(stack.completer)]!;

    expect(completer.Properties.ReservedConcurrentExecutions).toBeUndefined();
    template.resourceCountIs('AWS::Events::Rule', 0);
    // No route reaches it.
    const integrations = Object.values(resources).filter((r) => r.Type === 'AWS::ApiGatewayV2::Integration');
    expect(JSON.stringify(integrations)).not.toContain(logicalId(stack.completer));
  });

  it('encrypts every queue and refuses requests to it without TLS', () => {
    const queues = Object.entries(resources).filter(([, r]) => r.Type === 'AWS::SQS::Queue');
    const policies = Object.values(resources).filter((r) => r.Type === 'AWS::SQS::QueuePolicy');

    expect(queues).toHaveLength(3);
    for (const [id, queue] of queues) {
      expect(queue.Properties.SqsManagedSseEnabled).toBe(true);
      const policy = policies.find((p) => p.Properties.Queues.some((ref: { Ref: string }) => ref.Ref === id));
      expect(policy?.Properties.PolicyDocument.Statement).toContainEqual(
        expect.objectContaining({ Effect: 'Deny', Condition: { Bool: { 'aws:SecureTransport': 'false' } } }),
      );
    }
  });

  it('finishes an abandoned call of every tool end to end on DynamoDB Local: stream batch, rechecks, re-runs', () => {
    expect(completerObserved.rechecksSent).toBe(TOOLS.length);
    expect(completerObserved.recheckResponse).toEqual({ batchItemFailures: [] });
    for (const tool of TOOLS) {
      expect([tool.name, completerObserved.operations[tool.name]?.status]).toEqual([tool.name, 'completed']);
    }
  });

  it('may send on each table exactly what the tools send, and sends nothing there it may not', () => {
    const granted = dynamoAccessOf('complete');
    const toolsSent: Partial<Record<TableId, string[]>> = {};
    for (const tool of TOOLS) {
      for (const [table, actions] of Object.entries(observed[tool.name]!) as Array<[TableId, string[]]>) {
        toolsSent[table] = [...new Set([...(toolsSent[table] ?? []), ...actions])].sort();
      }
    }

    expectGrantsMatchObserved(granted, toolsSent);
    // What the deployed completer sent while finishing a call of every tool: a GetItem per recheck, then
    // what the tools send — on every table it may use, and only what it may.
    expect(Object.keys(completerObserved.dynamodb).sort()).toEqual(Object.keys(granted).sort());
    expect(completerObserved.dynamodb.idempotency).toContain('dynamodb:GetItem');
    for (const [table, actions] of Object.entries(completerObserved.dynamodb) as Array<[TableId, string[]]>) {
      expect(granted[table]).toEqual(expect.arrayContaining(actions));
    }
  });

  it('may read the stream and use its queues exactly as its triggers and its code need, nothing more', () => {
    const byResource: Record<string, string[]> = {};
    for (const { actions, resources: arns } of statementsOf('complete')) {
      for (const arn of arns) byResource[arn] = [...new Set([...(byResource[arn] ?? []), ...actions])].sort();
    }
    const arnOf = (id: string, attribute = 'Arn') => JSON.stringify({ 'Fn::GetAtt': [id, attribute] });
    const table = logicalId(stack.idempotencyTable.table);
    const { rechecks, streamFailures } = stack.completerTriggers;
    // The log group and the tables are checked above; everything else the role holds is listed here.
    const checkedAbove = [
      resources[logicalId(stack.completer)]!.Properties.LoggingConfig.LogGroup.Ref,
      table,
      ...Object.values(stack.tables).map((t) => logicalId(t)),
    ].map((id) => arnOf(id));

    expect(Object.fromEntries(Object.entries(byResource).filter(([arn]) => !checkedAbove.includes(arn)))).toEqual({
      // ListStreams (the stream mapping's) has no resource-level permissions; neither has X-Ray.
      [JSON.stringify('*')]: ['dynamodb:ListStreams', 'xray:PutTelemetryRecords', 'xray:PutTraceSegments'],
      [arnOf(table, 'StreamArn')]: ['dynamodb:DescribeStream', 'dynamodb:GetRecords', 'dynamodb:GetShardIterator'],
      // Its code sends rechecks; the SQS mapping receives and deletes them with the function's role.
      [arnOf(logicalId(rechecks))]: [
        'sqs:ChangeMessageVisibility',
        'sqs:DeleteMessage',
        'sqs:GetQueueAttributes',
        'sqs:GetQueueUrl',
        'sqs:ReceiveMessage',
        'sqs:SendMessage',
      ],
      // The stream mapping sends what it gave up on to the on-failure queue with the function's role.
      [arnOf(logicalId(streamFailures))]: ['sqs:GetQueueAttributes', 'sqs:GetQueueUrl', 'sqs:SendMessage'],
    });
    // What its code sent to SQS: SendMessageBatch, which IAM authorizes as sqs:SendMessage.
    expect(completerObserved.sqs).toEqual(['sqs:SendMessageBatch']);
  });
});

describe('tenant erase', () => {
  // The erase below must find the calls of its tenant alone: the shared table holds other suites' records
  // of no tenant (Powertools' handler's), which every tenant's erase reports as its own.
  ownIdempotencyTable('stack-erase');

  it('may send exactly what an erase sends on DynamoDB Local, and nothing reaches it over the API', async () => {
    const world = createWorld();
    const tenant = newTenant('erase-grants');
    const invoice = await world.seedInvoice(tenant);
    await world.runtime.invoke(
      world.refund,
      { tenant, user: 'ada' },
      { idempotency_key: 'k1', invoice_id: invoice.invoice_id, amount: invoice.amount },
      deadline(),
    );
    // A send inside its window: erase leaves its intent as a marker of no tenant (its holder settled) and
    // tombstones its record.
    await world.runtime.invoke(
      world.tools.send_email!,
      { tenant, user: 'ada' },
      { idempotency_key: 'k2', to: 'a@example.com', subject: 's', body: 'sent' },
      deadline(),
    );
    await world.tickets.create({ tenant, ticket_key: 'tck_1', title: 't', status: 'open', created_at: 'now' });
    await world.outbox.create({
      tenant,
      message_id: 'msg_1',
      to: 'a@example.com',
      subject: 's',
      body: 'b',
      status: 'queued',
      queued_at: 'now',
    });
    // What a release leaves of an intent remembering no window (a first run's business error): erase deletes
    // it. (The intent above, remembering its window, is left as a marker of no tenant: an UpdateItem.)
    await world.client.send(
      new PutItemCommand({
        TableName: tableName('idempotency'),
        Item: marshall({
          id: `send_email#intent#${randomUUID()}`,
          tenant,
          tool: 'send_email',
          expiration: Math.floor(Date.now() / 1000) + 3_600,
        }),
      }),
    );
    const sent = recordAccess(world.client);

    const report = await eraseTenant(world.client, { tenant, includeDomain: true }, process.env, TABLES);
    world.destroy();

    // Every call settled: the erase is whole (a call kept in flight would defer the app's tables).
    expect({ deferred: report.deferred, callsInFlight: report.callsInFlight }).toEqual({
      deferred: [],
      callsInFlight: {},
    });

    expect(dynamoAccessOf('erase')).toEqual(sent);
    const integrations = Object.values(resources).filter((r) => r.Type === 'AWS::ApiGatewayV2::Integration');
    expect(JSON.stringify(integrations)).not.toContain(logicalId(stack.eraser));
  });
});

/** The DynamoDB actions a client sends from now on, per table id, each list sorted. */
function recordAccess(client: DynamoDBClient): Partial<Record<TableId | 'idempotency', string[]>> {
  const sent: Partial<Record<TableId | 'idempotency', string[]>> = {};
  const ids = new Map(
    ([...Object.keys(TABLES), 'idempotency'] as Array<TableId | 'idempotency'>).map((id) => [tableName(id), id]),
  );
  client.middlewareStack.add(
    (next, context) => async (args) => {
      const table = ids.get((args.input as { TableName?: string }).TableName ?? '');
      if (table && context.commandName) {
        const action = `dynamodb:${context.commandName.replace(/Command$/, '')}`;
        sent[table] = [...new Set([...(sent[table] ?? []), action])].sort();
      }
      return next(args);
    },
    { step: 'initialize', name: 'recordAccess' },
  );
  return sent;
}

describe('alarms and the dashboard', () => {
  it('alarms on internal answers and the unavailable rate per tool, errors and throttles per function, DynamoDB throttles and system errors, the completer — to the topic given', () => {
    const { stack: alarmed, template: withTopic } = synthesize(
      { alarmTopicArn: 'arn:aws:sns:eu-west-1:123456789012:oncall' },
      { bundled: false },
    );
    const alarms = Object.values(withTopic.toJSON().Resources as Resources).filter(
      (r) => r.Type === 'AWS::CloudWatch::Alarm',
    );
    const functionCount = Object.keys(entriesFor(TOOLS)).length + 2;

    // Per tool 2, per function 2, per table 2; the completer's failures, its two failure queues, its give-ups.
    expect(alarms).toHaveLength(TOOLS.length * 2 + functionCount * 2 + 5 * 2 + 4);
    for (const alarm of alarms)
      expect(alarm.Properties.AlarmActions).toEqual(['arn:aws:sns:eu-west-1:123456789012:oncall']);
    const internalRefund = alarms.find((alarm) => {
      const text = JSON.stringify(alarm.Properties);
      return /"MetricName":"calls"/.test(text) && /"Value":"refund"/.test(text) && /"Value":"internal"/.test(text);
    });
    expect(internalRefund?.Properties).toMatchObject({
      Threshold: 1,
      ComparisonOperator: 'GreaterThanOrEqualToThreshold',
    });
    expect(JSON.stringify(internalRefund?.Properties)).toContain('"Namespace":"retrysafe"');
    withTopic.hasResourceProperties('AWS::CloudWatch::Alarm', {
      Metrics: Match.arrayWith([Match.objectLike({ Expression: '100 * FILL(unavailable, 0) / MAX([total, 1])' })]),
      Threshold: 5,
    });
    for (const queue of [alarmed.completerTriggers.streamFailures, alarmed.completerTriggers.recheckDeadLetters]) {
      withTopic.hasResourceProperties('AWS::CloudWatch::Alarm', {
        Namespace: 'AWS/SQS',
        MetricName: 'ApproximateNumberOfMessagesVisible',
        Dimensions: [{ Name: 'QueueName', Value: { 'Fn::GetAtt': [logicalId(queue, alarmed), 'QueueName'] } }],
        Threshold: 1,
        ComparisonOperator: 'GreaterThanOrEqualToThreshold',
      });
    }
    expect(alarmed.observability.dashboard).toBeDefined();
    withTopic.resourceCountIs('AWS::CloudWatch::Dashboard', 1);
  }, 120_000);

  it('alarms on a call the completer gave up on, reading the metric its invocations write', () => {
    const disabled = process.env.POWERTOOLS_METRICS_DISABLED;
    delete process.env.POWERTOOLS_METRICS_DISABLED;
    const lines: Array<Record<string, unknown>> = [];
    const write = jest.spyOn(process.stdout, 'write').mockImplementation((chunk) => {
      for (const line of String(chunk).split('\n').filter(Boolean)) lines.push(JSON.parse(line));
      return true;
    });
    try {
      createCompleterMetrics('retrysafe')({ rechecksScheduled: 3, callsFinished: 2, rechecksFailed: 0, gaveUp: 1 });
    } finally {
      write.mockRestore();
      process.env.POWERTOOLS_METRICS_DISABLED = disabled;
    }
    const [line] = lines as Array<{
      _aws: { CloudWatchMetrics: Array<{ Namespace: string; Dimensions: string[][] }> };
      [field: string]: unknown;
    }>;
    const gaveUp = Object.keys(line!).find((field) => line![field] === 1);

    expect(gaveUp).toBeDefined();
    expect(line!._aws.CloudWatchMetrics[0]!.Dimensions).toEqual([['service']]);
    template.hasResourceProperties('AWS::CloudWatch::Alarm', {
      Namespace: line!._aws.CloudWatchMetrics[0]!.Namespace,
      MetricName: gaveUp,
      Dimensions: [{ Name: 'service', Value: line!.service }],
      Statistic: 'Sum',
      Threshold: 1,
      ComparisonOperator: 'GreaterThanOrEqualToThreshold',
    });
  });

  it('turns active tracing on for every function, with the Powertools layer that brings the Tracer', () => {
    const parameters = template.toJSON().Parameters as Record<string, { Type: string; Default?: string }>;
    const layerParameter = Object.entries(parameters).find(
      ([, parameter]) => parameter.Default === POWERTOOLS_LAYER.ssmParameter(POWERTOOLS_LAYER.version),
    );

    expect(layerParameter?.[1].Type).toBe('AWS::SSM::Parameter::Value<String>');
    // The layer's version is the Tracer the code is built and tested with.
    const manifest = JSON.parse(readFileSync(join(__dirname, '../../package.json'), 'utf8'));
    expect(POWERTOOLS_LAYER.version).toBe(manifest.devDependencies['@aws-lambda-powertools/tracer']);
    for (const fn of [...Object.values(stack.functions), stack.completer, stack.eraser]) {
      const properties = resources[logicalId(fn)]!.Properties;
      expect(properties.TracingConfig).toEqual({ Mode: 'Active' });
      expect(properties.Layers).toEqual([{ Ref: layerParameter![0] }]);
    }
  });

  it('traces invocations only by default (the Tracer off by its own switch) and never enables source maps at run time', () => {
    for (const fn of [...Object.values(stack.functions), stack.completer, stack.eraser]) {
      const variables = resources[logicalId(fn)]!.Properties.Environment.Variables;

      expect([fn.node.id, variables.POWERTOOLS_TRACE_ENABLED, variables.NODE_OPTIONS]).toEqual([
        fn.node.id,
        'false',
        undefined,
      ]);
    }
  });

  it('traces every call with tracing: calls, and refuses a depth it does not know', () => {
    // Bundling skipped: only the functions' settings are read.
    const unbundled = () => new App({ context: { 'aws:cdk:bundling-stacks': [] } });
    const traced = new RetrysafeStack(unbundled(), 'Traced', { tracing: 'calls' });
    const tracedResources = Template.fromStack(traced).toJSON().Resources as Resources;

    for (const fn of [...Object.values(traced.functions), traced.completer, traced.eraser]) {
      const variables = tracedResources[logicalId(fn, traced)]!.Properties.Environment.Variables;
      expect([fn.node.id, variables.POWERTOOLS_TRACE_ENABLED]).toEqual([fn.node.id, 'true']);
    }
    expect(() => new RetrysafeStack(unbundled(), 'Deep', { tracing: 'deep' as 'calls' })).toThrow(
      /tracing: deep is not one of invocations, calls/,
    );
  });
});

describe('a real payment provider', () => {
  it('gives only the functions that move money Stripe: the provider setting, the secret ARN and read access to that secret alone', () => {
    const arn = 'arn:aws:secretsmanager:eu-west-1:123456789012:secret:retrysafe/stripe-AbCdEf';
    const { stack: withStripe, template: stripeTemplate } = synthesize({ stripeSecretArn: arn }, { bundled: false });
    const stripeResources = stripeTemplate.toJSON().Resources as Resources;
    const all = { ...withStripe.functions, complete: withStripe.completer, erase: withStripe.eraser } as Record<
      string,
      { node: { defaultChild?: unknown } }
    >;

    const withSecret = Object.entries(all)
      .filter(([name]) =>
        statementsOf(name, withStripe, stripeResources).some((statement) =>
          statement.actions.includes('secretsmanager:GetSecretValue'),
        ),
      )
      .map(([name]) => name)
      .sort();
    const configured = Object.entries(all)
      .filter(([, fn]) => stripeResources[logicalId(fn, withStripe)]!.Properties.Environment.Variables.PAYMENT_PROVIDER)
      .map(([name]) => name)
      .sort();

    expect(withSecret).toEqual(['complete', 'mcp', 'refund']);
    expect(configured).toEqual(['complete', 'mcp', 'refund']);
    const refund = stripeResources[logicalId(withStripe.functions.refund, withStripe)]!;
    expect(refund.Properties.Environment.Variables).toMatchObject({
      PAYMENT_PROVIDER: 'stripe',
      STRIPE_SECRET_ARN: arn,
    });
    for (const statement of statementsOf('refund', withStripe, stripeResources)) {
      if (statement.actions.some((action) => action.startsWith('secretsmanager:'))) {
        expect(statement.resources).toEqual([JSON.stringify(arn)]);
      }
    }
  }, 120_000);
});

describe('the HTTP API', () => {
  it('puts the JWT authorizer (issuer, audience) on every route but the public ones, MCP and $default included', () => {
    template.hasResourceProperties('AWS::ApiGatewayV2::Authorizer', {
      AuthorizerType: 'JWT',
      IdentitySource: ['$request.header.Authorization'],
      JwtConfiguration: {
        Issuer: 'https://cognito-idp.eu-west-1.amazonaws.com/eu-west-1_example',
        Audience: ['client-123'],
      },
    });
    const routes = Object.values(resources).filter((r) => r.Type === 'AWS::ApiGatewayV2::Route');
    const byKey = Object.fromEntries(
      routes.map((r) => [r.Properties.RouteKey, r.Properties.AuthorizationType ?? 'NONE']),
    );

    expect(byKey).toEqual({
      'GET /health': 'NONE',
      $default: 'JWT',
      'GET /tools': 'JWT',
      'POST /tools/create_invoice': 'JWT',
      'POST /tools/refund': 'JWT',
      'POST /tools/create_ticket': 'JWT',
      'POST /tools/close_ticket': 'JWT',
      'POST /tools/send_email': 'JWT',
      'GET /tools/{tool}/operations/{key}': 'JWT',
      'GET /invoices/{invoice_id}': 'JWT',
      'GET /tickets/{ticket_key}': 'JWT',
      // MCP behind the authorizer too: a tokenless request never runs the MCP function. Its metadata is public.
      'POST /mcp': 'JWT',
      'GET /mcp': 'JWT',
      'DELETE /mcp': 'JWT',
      'GET /.well-known/oauth-protected-resource': 'NONE',
      'GET /.well-known/oauth-protected-resource/mcp': 'NONE',
      'GET /openapi.json': 'NONE',
    });
  });

  it('throttles the stage and writes access logs that carry no bodies or headers', () => {
    const stage = Object.values(resources).find((r) => r.Type === 'AWS::ApiGatewayV2::Stage')!;

    expect(stage.Properties).toMatchObject({
      StageName: '$default',
      AutoDeploy: true,
      DefaultRouteSettings: { ThrottlingRateLimit: 100, ThrottlingBurstLimit: 200 },
    });
    const format = JSON.parse(stage.Properties.AccessLogSettings.Format);
    expect(format).toMatchObject({ requestId: '$context.requestId', status: '$context.status' });
    expect(stage.Properties.AccessLogSettings.Format).not.toMatch(/body|header|authorization/i);
  });

  it('gives each public route a small bucket of its own (5/s, bursts of 10): a flood there is that route alone', () => {
    const stage = Object.values(resources).find((r) => r.Type === 'AWS::ApiGatewayV2::Stage')!;
    const tokenless = Object.values(resources)
      .filter((r) => r.Type === 'AWS::ApiGatewayV2::Route' && (r.Properties.AuthorizationType ?? 'NONE') === 'NONE')
      .map((r) => r.Properties.RouteKey as string);

    expect(tokenless.sort()).toEqual([
      'GET /.well-known/oauth-protected-resource',
      'GET /.well-known/oauth-protected-resource/mcp',
      'GET /health',
      'GET /openapi.json',
    ]);
    for (const route of tokenless) {
      expect([route, stage.Properties.RouteSettings[route]]).toEqual([
        route,
        { ThrottlingRateLimit: 5, ThrottlingBurstLimit: 10 },
      ]);
    }
  });

  it('gives POST /mcp a bucket of 30/s, bursts of 30: within the 50 executions reserved for the MCP function', () => {
    const stage = Object.values(resources).find((r) => r.Type === 'AWS::ApiGatewayV2::Stage')!;

    expect(stage.Properties.RouteSettings['POST /mcp']).toEqual({ ThrottlingRateLimit: 30, ThrottlingBurstLimit: 30 });
  });

  it('lets no request into the MCP function but through a route with a bucket: at most 50 requests/s there', () => {
    const stage = Object.values(resources).find((r) => r.Type === 'AWS::ApiGatewayV2::Stage')!;
    const mcpIntegrations = Object.entries(resources)
      .filter(([, r]) => r.Type === 'AWS::ApiGatewayV2::Integration')
      .filter(([, r]) => JSON.stringify(r.Properties.IntegrationUri).includes(logicalId(stack.functions.mcp)))
      .map(([id]) => id);
    const intoMcp = Object.values(resources)
      .filter((r) => r.Type === 'AWS::ApiGatewayV2::Route')
      .filter((r) => mcpIntegrations.some((id) => JSON.stringify(r.Properties.Target).includes(id)))
      .map((r) => r.Properties.RouteKey as string);
    const settings = intoMcp.map((route) => stage.Properties.RouteSettings[route]);
    const rate = settings.reduce((sum, setting) => sum + setting.ThrottlingRateLimit, 0);

    expect(intoMcp.sort()).toEqual([
      'DELETE /mcp',
      'GET /.well-known/oauth-protected-resource',
      'GET /.well-known/oauth-protected-resource/mcp',
      'GET /mcp',
      'POST /mcp',
    ]);
    expect(settings.every((setting) => setting !== undefined)).toBe(true);
    expect(rate).toBe(50);
  });

  it('creates the stage after the routes its settings name (CloudFormation refuses settings for a route not yet there)', () => {
    const [stageId, stage] = Object.entries(
      template.toJSON().Resources as Record<string, { DependsOn?: string[] }>,
    ).find(([, r]) => (r as { Type: string }).Type === 'AWS::ApiGatewayV2::Stage')!;
    const routeIds = Object.entries(resources)
      .filter(([, r]) => r.Type === 'AWS::ApiGatewayV2::Route')
      .filter(([, r]) => Object.keys(resources[stageId]!.Properties.RouteSettings).includes(r.Properties.RouteKey))
      .map(([id]) => id);

    expect(routeIds).toHaveLength(7);
    expect(stage.DependsOn).toEqual(expect.arrayContaining(routeIds));
  });

  it('caps the MCP function at 50 concurrent executions, and reserves nothing for any other function', () => {
    const reserved = Object.fromEntries(
      Object.entries(resources)
        .filter(
          ([, r]) => r.Type === 'AWS::Lambda::Function' && r.Properties.ReservedConcurrentExecutions !== undefined,
        )
        .map(([id, r]) => [id, r.Properties.ReservedConcurrentExecutions]),
    );

    expect(reserved).toEqual({ [logicalId(stack.functions.mcp)]: 50 });
  });

  it('outputs the API URL and the table names', () => {
    const outputs = Object.keys(template.toJSON().Outputs);

    expect(outputs.sort()).toEqual(
      [
        'ApiUrl',
        'IdempotencyTableName',
        'InvoicesTableName',
        'LedgerTableName',
        'OutboxTableName',
        'TicketsTableName',
      ].sort(),
    );
  });
});

describe('the deployed bundles', () => {
  it.each(Object.keys(entriesFor(TOOLS)) as Array<EntryName<(typeof TOOLS)[number]>>)(
    'bundles %s minified, with a source map, the AWS SDK left out, within budget',
    (name) => {
      const code = resources[logicalId(stack.functions[name])]!.Properties.Code;
      const assetDir = join(
        defaultOutdir,
        `asset.${String(code.S3Key['Fn::Sub'] ?? code.S3Key).replace(/\.zip$/, '')}`,
      );
      const js = readFileSync(join(assetDir, 'index.js'), 'utf8');
      const sources: string[] = JSON.parse(readFileSync(join(assetDir, 'index.js.map'), 'utf8')).sources;

      expect(Buffer.byteLength(js)).toBeLessThanOrEqual(bundleBudgetOf(name));
      expect(js).not.toMatch(/^\/\/ (lib|lambdas)\//m); // esbuild marks each module so only when not minifying
      // The SDK is the runtime's: no SDK source is bundled, and what touches DynamoDB requires it.
      expect(sources.filter((source) => source.includes('node_modules/@aws-sdk/'))).toEqual([]);
      if (Object.keys(entriesFor(TOOLS)[name]).length > 0) {
        expect(js).toContain('require("@aws-sdk/client-dynamodb")');
        // The Tracer is the layer's: required, never bundled.
        expect(js).toContain('require("@aws-lambda-powertools/tracer")');
        expect(sources.filter((source) => source.includes('aws-xray-sdk'))).toEqual([]);
      }
    },
  );
});

describe('a tool added the documented way', () => {
  it('gets a function from its entry file, a JWT route and exactly its declared grants', () => {
    const fixture = synthesize(
      {
        tools: TOOLS_WITH_FIXTURE,
        entryFile: (entry) =>
          entry === 'send_reminder'
            ? join(FIXTURE_ENTRY_DIR, `${entry}.ts`)
            : join(__dirname, '../../lambdas', `${entry}.ts`),
      },
      { bundled: false },
    );
    const fixtureResources = fixture.template.toJSON().Resources as Resources;
    const routes = Object.values(fixtureResources).filter((r) => r.Type === 'AWS::ApiGatewayV2::Route');

    expect(fixture.stack.functions.send_reminder).toBeDefined();
    expect(routes.map((r) => [r.Properties.RouteKey, r.Properties.AuthorizationType])).toContainEqual([
      'POST /tools/send_reminder',
      'JWT',
    ]);
    const granted = dynamoAccessOf('send_reminder', fixture.stack, fixtureResources);
    expect(granted).toEqual({ idempotency: [...CLAIM_ACTIONS].sort(), outbox: ['dynamodb:PutItem'] });
    expectGrantsMatchObserved(granted, observed.send_reminder!);
  }, 120_000);
});

describe('cdk-nag', () => {
  it('finds nothing unacknowledged in the AwsSolutions pack', () => {
    // The rules read resources and their properties, not the bundles' code.
    const { app } = synthesize({}, { bundled: false });

    expect(() => app.synth()).not.toThrow();
  }, 120_000);
});
