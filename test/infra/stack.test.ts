import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { App, Validations } from 'aws-cdk-lib';
import { Match, Template } from 'aws-cdk-lib/assertions';
import { AwsSolutionsChecks } from 'cdk-nag';
import { BUNDLE_BUDGET_BYTES, FUNCTION_ACCESS } from '../../lib/infra/defaults';
import { RetrysafeStack } from '../../lib/infra/retrysafe-stack';

// biome-ignore lint/suspicious/noExplicitAny: CloudFormation properties are asserted structurally
type Resources = Record<string, { Type: string; Properties: Record<string, any>; DeletionPolicy?: string }>;

/** The stack as `cdk synth` builds it (bundles included), with cdk-nag's AwsSolutions pack. */
function synthesize(props: ConstructorParameters<typeof RetrysafeStack>[2] = {}) {
  const app = new App({ outdir: mkdtempSync(join(tmpdir(), 'retrysafe-cdk-')) });
  outdir = app.outdir;
  const stack = new RetrysafeStack(app, 'Retrysafe', {
    issuer: 'https://cognito-idp.eu-west-1.amazonaws.com/eu-west-1_example',
    audience: 'client-123',
    ...props,
  });
  Validations.of(app).addPlugins(new AwsSolutionsChecks(app));
  return { app, stack, template: Template.fromStack(stack) };
}

/** Where the last synthesis wrote its assets (content-addressed: every synthesis writes the same). */
let outdir: string;
let stack: RetrysafeStack;
let template: Template;
let resources: Resources;
beforeAll(() => {
  ({ stack, template } = synthesize());
  resources = template.toJSON().Resources as Resources;
}, 120_000);

function logicalId(construct: { node: { defaultChild?: unknown } }): string {
  return stack.getLogicalId(construct.node.defaultChild as never);
}

/** Every IAM statement attached to a function's role, as { actions, resources } with logical ids. */
function statementsOf(functionName: string): Array<{ actions: string[]; resources: string[] }> {
  const role = stack.functions[functionName]!.role!;
  const roleId = stack.getLogicalId(role.node.defaultChild as never);
  return Object.values(resources)
    .filter(
      (r) => r.Type === 'AWS::IAM::Policy' && r.Properties.Roles.some((ref: { Ref: string }) => ref.Ref === roleId),
    )
    .flatMap((policy) => policy.Properties.PolicyDocument.Statement)
    .map((statement: { Action: string | string[]; Resource: unknown }) => ({
      actions: [statement.Action].flat().sort(),
      resources: [statement.Resource].flat().map((resource) => JSON.stringify(resource)),
    }));
}

/** The DynamoDB actions a function may send, per table construct id. */
function dynamoAccessOf(functionName: string): Record<string, string[]> {
  const tables = { KeyStore: stack.keyStore.table, ...stack.tables };
  const access: Record<string, string[]> = {};
  for (const { actions, resources: arns } of statementsOf(functionName)) {
    for (const [name, table] of Object.entries(tables)) {
      if (arns.some((arn) => arn.includes(`"${logicalId(table)}"`))) {
        access[name] = [...(access[name] ?? []), ...actions.filter((a) => a.startsWith('dynamodb:'))].sort();
      }
    }
  }
  return access;
}

describe('the key store', () => {
  it('keys records by a hash-spread id, with TTL on expiration, PITR, encryption, on demand, retained', () => {
    template.hasResource('AWS::DynamoDB::Table', {
      DeletionPolicy: 'Retain',
      Properties: Match.objectLike({
        KeySchema: [{ AttributeName: 'id', KeyType: 'HASH' }],
        TimeToLiveSpecification: { AttributeName: 'expiration', Enabled: true },
        PointInTimeRecoverySpecification: { PointInTimeRecoveryEnabled: true },
        BillingMode: 'PAY_PER_REQUEST',
        SSESpecification: { SSEEnabled: true },
        GlobalSecondaryIndexes: [
          Match.objectLike({
            IndexName: 'by-tenant',
            KeySchema: [
              { AttributeName: 'tenant', KeyType: 'HASH' },
              { AttributeName: 'tool', KeyType: 'RANGE' },
            ],
            Projection: { ProjectionType: 'KEYS_ONLY' },
          }),
        ],
      }),
    });
  });

  it('keeps every domain table too: PITR, on demand, retained', () => {
    const tables = Object.values(resources).filter((r) => r.Type === 'AWS::DynamoDB::Table');

    expect(tables).toHaveLength(5);
    for (const table of tables) {
      expect(table.DeletionPolicy).toBe('Retain');
      expect(table.Properties.PointInTimeRecoverySpecification).toEqual({ PointInTimeRecoveryEnabled: true });
      expect(table.Properties.BillingMode).toBe('PAY_PER_REQUEST');
    }
  });

  it('deletes the tables with the stack only when asked', () => {
    const { template: destroying } = synthesize({ destroyTablesOnRemoval: true });

    const tables = Object.values(destroying.toJSON().Resources as Resources).filter(
      (r) => r.Type === 'AWS::DynamoDB::Table',
    );
    expect(tables.map((t) => t.DeletionPolicy)).toEqual(Array(5).fill('Delete'));
  }, 120_000);
});

describe('the functions', () => {
  it('runs every function on Node.js 22, arm64, with the table names and the tenant claim', () => {
    const functions = Object.values(resources).filter((r) => r.Type === 'AWS::Lambda::Function');

    expect(functions).toHaveLength(11);
    for (const fn of functions) {
      expect(fn.Properties).toMatchObject({
        Runtime: 'nodejs22.x',
        Architectures: ['arm64'],
        Environment: {
          Variables: expect.objectContaining({
            IDEMPOTENCY_TABLE: { Ref: logicalId(stack.keyStore.table) },
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

  it.each([
    [
      'create_invoice',
      {
        KeyStore: ['dynamodb:DeleteItem', 'dynamodb:GetItem', 'dynamodb:PutItem', 'dynamodb:UpdateItem'],
        invoices: ['dynamodb:PutItem'],
      },
    ],
    [
      'refund',
      {
        KeyStore: ['dynamodb:DeleteItem', 'dynamodb:GetItem', 'dynamodb:PutItem', 'dynamodb:UpdateItem'],
        invoices: ['dynamodb:GetItem', 'dynamodb:UpdateItem'],
        ledger: ['dynamodb:PutItem'],
      },
    ],
    [
      'create_ticket',
      {
        KeyStore: ['dynamodb:DeleteItem', 'dynamodb:GetItem', 'dynamodb:PutItem', 'dynamodb:UpdateItem'],
        tickets: ['dynamodb:PutItem'],
      },
    ],
    [
      'close_ticket',
      {
        KeyStore: ['dynamodb:DeleteItem', 'dynamodb:GetItem', 'dynamodb:PutItem', 'dynamodb:UpdateItem'],
        tickets: ['dynamodb:UpdateItem'],
      },
    ],
    [
      'send_email',
      {
        KeyStore: ['dynamodb:DeleteItem', 'dynamodb:GetItem', 'dynamodb:PutItem', 'dynamodb:UpdateItem'],
        outbox: ['dynamodb:PutItem', 'dynamodb:UpdateItem'],
      },
    ],
    ['get_operation', { KeyStore: ['dynamodb:GetItem'] }],
    ['get_invoice', { invoices: ['dynamodb:GetItem'] }],
    ['get_ticket', { tickets: ['dynamodb:GetItem'] }],
    ['list_tools', {}],
    ['health', {}],
    ['not_found', {}],
  ])('grants %s exactly the DynamoDB actions its code sends, on exactly its tables', (name, expected) => {
    expect(dynamoAccessOf(name)).toEqual(expected);
  });

  it('grants nothing but DynamoDB on those tables and writing to its own log group', () => {
    for (const [name, fn] of Object.entries(stack.functions)) {
      const logGroupId = resources[logicalId(fn)]!.Properties.LoggingConfig.LogGroup.Ref;
      for (const { actions, resources: arns } of statementsOf(name)) {
        if (actions.every((a) => a.startsWith('logs:'))) {
          expect(actions).toEqual(['logs:CreateLogStream', 'logs:PutLogEvents']);
          expect(arns).toEqual([JSON.stringify({ 'Fn::GetAtt': [logGroupId, 'Arn'] })]);
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

describe('the HTTP API', () => {
  it('puts the JWT authorizer (issuer, audience) on every route but GET /health, $default included', () => {
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
  it.each(Object.keys(FUNCTION_ACCESS))(
    'bundles %s minified, with a source map, the AWS SDK left out, within budget',
    (name) => {
      const code = resources[logicalId(stack.functions[name]!)]!.Properties.Code;
      const assetDir = join(outdir, `asset.${String(code.S3Key['Fn::Sub'] ?? code.S3Key).replace(/\.zip$/, '')}`);
      const js = readFileSync(join(assetDir, 'index.js'), 'utf8');

      expect(Buffer.byteLength(js)).toBeLessThanOrEqual(BUNDLE_BUDGET_BYTES);
      expect(existsSync(join(assetDir, 'index.js.map'))).toBe(true);
      expect(js).not.toMatch(/^\/\/ (lib|lambdas)\//m); // esbuild marks each module so only when not minifying
      expect(js).not.toMatch(/class DynamoDBClient\b/);
    },
  );
});

describe('cdk-nag', () => {
  it('finds nothing unacknowledged in the AwsSolutions pack', () => {
    const { app } = synthesize();

    expect(() => app.synth()).not.toThrow();
  }, 120_000);
});
