import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { App, RemovalPolicy, Stack } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import type * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import type { Function as LambdaFunction } from 'aws-cdk-lib/aws-lambda';
import { Secret } from 'aws-cdk-lib/aws-secretsmanager';
import * as z from 'zod/mini';
import { TABLES } from '../../app/tables';
import { openStore } from '../../lib/cli/store';
import { CLAIM_ACTIONS, IdempotencyTable } from '../../lib/infra/idempotency-table';
import { packageEntryFile, Retrysafe, type RetrysafeProps, retrysafePropProblems } from '../../lib/infra/retrysafe';
import { tableFromDefinition } from '../../lib/infra/table';
import { type AnyToolModule, defineToolModule } from '../../lib/tools/tool-module';
import { drawLots } from '../fixtures/outside/draw-lots';
import { getBalance } from '../fixtures/outside/get-balance';
import { sendReminder } from '../fixtures/tools/send-reminder';
import { initError } from '../helpers/lambda-init';
import { withoutBundlingProgress } from './quiet-bundling';

const LAMBDAS = join(__dirname, '..', '..', 'lib', 'lambda', 'entries');
/** The example app's entries: an app's own mcp, completer and listings, as the construct wants them. */
const EXAMPLE_LAMBDAS = join(__dirname, '..', '..', 'lambdas');
const FIXTURE_LAMBDAS = join(__dirname, '..', 'fixtures', 'lambdas');
const REMINDER_ENTRY = join(FIXTURE_LAMBDAS, 'send_reminder.ts');
/** The entry files of an app whose tool and read import packages of their own (test/fixtures/outside). */
const outside = (entry: string) => join(__dirname, '..', 'fixtures', 'outside', 'lambdas', `${entry}.ts`);
const PROVIDER_KEY = 'arn:aws:secretsmanager:eu-west-1:123456789012:secret:provider-key-AbCdEf';

// biome-ignore lint/suspicious/noExplicitAny: CloudFormation properties are asserted structurally
type Resources = Record<string, { Type: string; Properties: Record<string, any> }>;

/** An app's own props: one table and one tool of its own, the example's entries for the rest. */
function appProps(stack: Stack, overrides: Partial<RetrysafeProps> = {}): RetrysafeProps {
  return {
    tools: [{ tool: sendReminder, entry: join(FIXTURE_LAMBDAS, 'send_reminder.ts') }],
    entries: {
      mcp: join(EXAMPLE_LAMBDAS, 'mcp.ts'),
      complete: join(EXAMPLE_LAMBDAS, 'complete.ts'),
      list_tools: join(EXAMPLE_LAMBDAS, 'list_tools.ts'),
      openapi: join(EXAMPLE_LAMBDAS, 'openapi.ts'),
    },
    tables: { outbox: tableFromDefinition(stack, 'Outbox', TABLES.outbox) },
    issuer: 'https://issuer.example',
    audience: 'app',
    ...overrides,
  };
}

/** An app's own stack with one table and one tool of its own; bundling skipped (settings only). */
function appStack(overrides: Partial<RetrysafeProps> | ((stack: Stack) => Partial<RetrysafeProps>) = {}) {
  const app = new App({ context: { 'aws:cdk:bundling-stacks': [] } });
  const stack = new Stack(app, 'App');
  const props = appProps(stack, typeof overrides === 'function' ? overrides(stack) : overrides);
  const retrysafe = new Retrysafe(stack, 'Tools', props);
  const template = Template.fromStack(stack);
  return {
    stack,
    props,
    outbox: props.tables!.outbox!,
    retrysafe,
    resources: template.toJSON().Resources as Resources,
  };
}

describe('the Retrysafe construct in an app’s own stack', () => {
  it('outputs the API URL and every table name, which retrysafe calls/complete/erase --aws --outputs read back', () => {
    const { stack, outbox, retrysafe } = appStack();
    const outputs = Template.fromStack(stack).toJSON().Outputs as Record<string, { Value: { Ref?: string } }>;
    // A `cdk deploy --outputs-file`: each output's key, and (standing in for the deployed name) its Ref.
    const file = join(mkdtempSync(join(tmpdir(), 'retrysafe-outputs-')), 'outputs.json');
    const deployed = Object.fromEntries(
      Object.entries(outputs).map(([key, output]) => [key, output.Value.Ref ?? JSON.stringify(output.Value)]),
    );
    writeFileSync(file, JSON.stringify({ App: deployed }));

    const store = openStore(
      { aws: true, region: 'eu-west-1', outputs: file },
      { outbox: TABLES.outbox },
      'usage',
      '/',
      {},
    );
    const same = openStore(
      { aws: true, region: 'eu-west-1', outputs: file, table: ['outbox=mine'] },
      { outbox: TABLES.outbox },
      'usage',
      '/',
      {},
    );

    expect(
      Object.keys(outputs)
        .map((key) => key.replace(/[0-9A-F]{8}$/, ''))
        .sort(),
    ).toEqual(['ToolsApiUrl', 'ToolsIdempotencyTableName', 'ToolsOutboxTableName'].sort());
    expect(store.where).toBe('AWS, eu-west-1');
    expect(store.env.IDEMPOTENCY_TABLE).toBe(
      stack.getLogicalId(retrysafe.idempotencyTable.table.node.defaultChild as never),
    );
    expect(store.env.OUTBOX_TABLE).toBe(stack.getLogicalId(outbox.node.defaultChild as never));
    expect(same.env.OUTBOX_TABLE).toBe('mine');
    expect(() => openStore({ aws: true, region: 'eu-west-1' }, { outbox: TABLES.outbox }, 'usage', '/', {})).toThrow(
      /AWS: no name for the tables idempotency \(IDEMPOTENCY_TABLE\), outbox \(OUTBOX_TABLE\)/,
    );
  });

  it('protects its own idempotency table and a definedTable from deletion unless they are destroyed with the stack', () => {
    let destroyed: dynamodb.Table | undefined;
    let unprotected: IdempotencyTable | undefined;
    const { stack, retrysafe, outbox, resources } = appStack((scope) => {
      destroyed = tableFromDefinition(scope, 'Scratch', TABLES.tickets, { removalPolicy: RemovalPolicy.DESTROY });
      unprotected = new IdempotencyTable(scope, 'Unprotected', { deletionProtection: false });
      return {};
    });
    const protection = (table: { node: { defaultChild?: unknown } }) =>
      resources[stack.getLogicalId(table.node.defaultChild as never)]?.Properties.DeletionProtectionEnabled;

    expect(protection(retrysafe.idempotencyTable.table)).toBe(true);
    expect(protection(outbox)).toBe(true);
    expect(protection(destroyed!)).toBe(false);
    expect(protection(unprotected!.table)).toBe(false);
  });

  it('creates a function per tool and per entry of its own, with the app’s table names and no other', () => {
    const { stack, outbox, retrysafe, resources } = appStack();

    expect(Object.keys(retrysafe.functions).sort()).toEqual(
      ['get_operation', 'health', 'list_tools', 'mcp', 'not_found', 'openapi', 'send_reminder'].sort(),
    );
    const reminder = resources[stack.getLogicalId(retrysafe.functions.send_reminder!.node.defaultChild as never)]!;
    expect(reminder.Properties.Environment.Variables).toMatchObject({
      OUTBOX_TABLE: { Ref: stack.getLogicalId(outbox.node.defaultChild as never) },
      IDEMPOTENCY_TABLE: { Ref: stack.getLogicalId(retrysafe.idempotencyTable.table.node.defaultChild as never) },
      TOOL_NAMES: 'send_reminder',
      JWT_ISSUER: 'https://issuer.example',
    });
    expect(reminder.Properties.Environment.Variables.INVOICES_TABLE).toBeUndefined();
  });

  it('grants the tool exactly its declared access: the claims on the idempotency table, PutItem on its table', () => {
    const { stack, outbox, retrysafe, resources } = appStack();
    const roleId = stack.getLogicalId(retrysafe.functions.send_reminder!.role!.node.defaultChild as never);
    const outboxId = stack.getLogicalId(outbox.node.defaultChild as never);
    const idempotencyId = stack.getLogicalId(retrysafe.idempotencyTable.table.node.defaultChild as never);

    const statements = Object.values(resources)
      .filter(
        (r) => r.Type === 'AWS::IAM::Policy' && r.Properties.Roles.some((ref: { Ref: string }) => ref.Ref === roleId),
      )
      .flatMap((policy) => policy.Properties.PolicyDocument.Statement)
      .filter((statement: { Action: string | string[] }) =>
        [statement.Action].flat().some((a) => a.startsWith('dynamodb:')),
      )
      .map((statement: { Action: string | string[]; Resource: unknown }) => ({
        actions: [statement.Action].flat().sort(),
        on: JSON.stringify(statement.Resource),
      }));

    expect(statements).toHaveLength(2);
    expect(statements).toContainEqual({ actions: ['dynamodb:PutItem'], on: expect.stringContaining(outboxId) });
    expect(statements).toContainEqual({
      actions: [...CLAIM_ACTIONS].sort(),
      on: expect.stringContaining(idempotencyId),
    });
  });

  it('uses the package’s own entries where the app gives none: erase reaches the idempotency table only', () => {
    const { stack, retrysafe, resources } = appStack();
    const roleId = stack.getLogicalId(retrysafe.eraser.role!.node.defaultChild as never);
    const idempotencyId = stack.getLogicalId(retrysafe.idempotencyTable.table.node.defaultChild as never);

    const dynamo = Object.values(resources)
      .filter(
        (r) => r.Type === 'AWS::IAM::Policy' && r.Properties.Roles.some((ref: { Ref: string }) => ref.Ref === roleId),
      )
      .flatMap((policy) => policy.Properties.PolicyDocument.Statement)
      .filter((statement: { Action: string | string[] }) =>
        [statement.Action].flat().some((a) => a.startsWith('dynamodb:')),
      );

    expect(dynamo).toHaveLength(1);
    expect(JSON.stringify(dynamo[0].Resource)).toContain(idempotencyId);
    expect(packageEntryFile('erase')).toBe(join(LAMBDAS, 'erase_records.ts'));
    expect(packageEntryFile('get_operation')).toBe(join(LAMBDAS, 'get_operation.ts'));
  });

  it('checks every prop up front and reports every problem in one error', () => {
    const attempt = () =>
      appStack({
        tools: [
          { tool: { ...sendReminder, name: 'health' } as AnyToolModule, entry: '/nowhere/health.ts' },
          {
            tool: { ...sendReminder, access: { contacts: ['dynamodb:PutItem'] } },
            entry: join(FIXTURE_LAMBDAS, 'send_reminder.ts'),
            needs: { bundledModules: ['stripe'] },
          },
        ],
        mcpReservedConcurrency: 0,
      });

    expect(attempt).toThrow(
      new Error(
        [
          "Retrysafe: health: a tool or read cannot be named like one of retrysafe's own entry points",
          'tools.send_reminder.access: names the table contacts, which tables does not have',
          'tools.health.entry: /nowhere/health.ts does not exist',
          "mcpReservedConcurrency: 0 is neither a whole number from 1 up nor 'none'",
          'tools.send_reminder.needs.bundledModules: stripe is bundled anyway (not in bundling.externalModules)',
        ].join('; '),
      ),
    );
  });
});

/** A second tool of the app's that writes nowhere: it calls a fax provider. */
const sendFax = defineToolModule({
  name: 'send_fax',
  description: 'Send a fax. Once per idempotency_key.',
  args: z.strictObject({ to: z.string() }),
  annotations: { destructiveHint: false, openWorldHint: true },
  receipt: z.strictObject({ fax_id: z.string() }),
  access: {},
  async execute() {
    return { receipt: { fax_id: 'f1' }, replayed: false };
  },
});

/** Every function of the construct, routed or not, by its entry's name. */
function functionsOf(retrysafe: Retrysafe): Record<string, LambdaFunction> {
  return { ...retrysafe.functions, complete: retrysafe.completer, erase: retrysafe.eraser };
}

describe("what the tools' and reads' code needs (needs)", () => {
  it('refuses a variable two of them set to different values, and one the construct sets itself, all at once', () => {
    const attempt = () =>
      appStack({
        tools: [
          { tool: sendReminder, entry: REMINDER_ENTRY, needs: { environment: { PROVIDER_KEY_ARN: 'arn:reminders' } } },
          {
            tool: sendFax,
            entry: REMINDER_ENTRY,
            needs: { environment: { PROVIDER_KEY_ARN: 'arn:fax', TENANT_CLAIM: 'org' } },
          },
        ],
        reads: [
          {
            read: getBalance,
            entry: outside('get_balance'),
            needs: { environment: { PROVIDER_KEY_ARN: 'arn:reminders', OUTBOX_TABLE: 'mine' } },
          },
        ],
      });

    expect(attempt).toThrow(
      new Error(
        [
          "Retrysafe: tools.send_fax.needs.environment: PROVIDER_KEY_ARN is also tools.send_reminder's, with another value (the MCP function runs both)",
          'tools.send_fax.needs.environment: TENANT_CLAIM is set by the construct itself',
          'reads.get_balance.needs.environment: OUTBOX_TABLE is set by the construct itself',
        ].join('; '),
      ),
    );
  });

  it('refuses every variable the construct sets on one of its functions', () => {
    const { resources } = appStack();
    const set = new Set(
      Object.values(resources)
        .filter((resource) => resource.Type === 'AWS::Lambda::Function')
        .flatMap((fn) => Object.keys(fn.Properties.Environment?.Variables ?? {})),
    );
    const props = appProps(new Stack(new App(), 'Check'));

    const refused = [...set].filter((name) =>
      retrysafePropProblems({
        ...props,
        tools: [{ tool: sendReminder, entry: REMINDER_ENTRY, needs: { environment: { [name]: 'x' } } }],
      }).includes(`tools.send_reminder.needs.environment: ${name} is set by the construct itself`),
    );

    expect(set).toContain('TENANT_CLAIM');
    expect(set).toContain('RECHECK_QUEUE_URL');
    expect(refused.sort()).toEqual([...set].sort());
  });

  it("gives a read's needs to its own function and the MCP function, and to no other", () => {
    const { stack, retrysafe, resources } = appStack((scope) => ({
      reads: [
        {
          read: getBalance,
          entry: outside('get_balance'),
          needs: {
            environment: { PROVIDER_KEY_ARN: PROVIDER_KEY },
            secrets: [Secret.fromSecretCompleteArn(scope, 'ProviderKey', PROVIDER_KEY)],
            bundledModules: ['stripe'],
          },
        },
      ],
      bundling: { externalModules: ['stripe'] },
    }));
    const functions = functionsOf(retrysafe);
    const policies = Object.values(resources).filter((resource) => resource.Type === 'AWS::IAM::Policy');
    /** Whether a function's role may read the provider's key. */
    const readsKey = (fn: LambdaFunction) => {
      const roleId = stack.getLogicalId(fn.role!.node.defaultChild as never);
      return policies
        .filter((policy) => policy.Properties.Roles.some((ref: { Ref: string }) => ref.Ref === roleId))
        .flatMap((policy) => policy.Properties.PolicyDocument.Statement)
        .some(
          (statement: { Action: string | string[]; Resource: unknown }) =>
            [statement.Action].flat().includes('secretsmanager:GetSecretValue') &&
            JSON.stringify(statement.Resource).includes('provider-key'),
        );
    };
    const environmentOf = (fn: LambdaFunction) =>
      resources[stack.getLogicalId(fn.node.defaultChild as never)]!.Properties.Environment.Variables;

    const given = Object.entries(functions)
      .filter(([, fn]) => environmentOf(fn).PROVIDER_KEY_ARN === PROVIDER_KEY)
      .map(([name]) => name);
    const granted = Object.entries(functions)
      .filter(([, fn]) => readsKey(fn))
      .map(([name]) => name);

    expect(given.sort()).toEqual(['get_balance', 'mcp']);
    expect(granted.sort()).toEqual(['get_balance', 'mcp']);
  });

  it("refuses to leave out of the bundles a package retrysafe's own code loads", () => {
    const attempt = () =>
      appStack({ bundling: { externalModules: ['canonicalize', 'stripe', 'zod/mini', '@modelcontextprotocol/*'] } });

    expect(attempt).toThrow(
      new Error(
        ['canonicalize', ['zod/mini', 'zod'], ['@modelcontextprotocol/*', '@modelcontextprotocol/server']]
          .map((entry) => {
            const [pattern, left] = typeof entry === 'string' ? [entry, entry] : entry;
            return `bundling.externalModules: ${pattern} would leave retrysafe's own ${left} out of the bundles (its code loads them in the functions, and the Lambda runtime has none: they would fail at init)`;
          })
          .join('; ')
          .replace(/^/, 'Retrysafe: '),
      ),
    );
  });
});

describe('the bundles of an app whose tool and read import packages its bundling leaves out', () => {
  let stack: Stack;
  let retrysafe: Retrysafe;
  let outdir: string;
  beforeAll(() => {
    const app = new App({ outdir: mkdtempSync(join(tmpdir(), 'retrysafe-outside-')) });
    outdir = app.outdir;
    stack = new Stack(app, 'Outside');
    retrysafe = withoutBundlingProgress(
      () =>
        new Retrysafe(stack, 'Tools', {
          tools: [{ tool: drawLots, entry: outside('draw_lots'), needs: { bundledModules: ['pure-rand'] } }],
          reads: [{ read: getBalance, entry: outside('get_balance'), needs: { bundledModules: ['stripe'] } }],
          entries: {
            mcp: outside('mcp'),
            complete: outside('complete'),
            list_tools: outside('list_tools'),
            openapi: outside('openapi'),
          },
          bundling: { externalModules: ['pure-rand', 'stripe'] },
          issuer: 'https://issuer.example',
          audience: 'app',
        }),
    );
    Template.fromStack(stack);
  }, 120_000);

  /** Where a function's bundle is, in the synthesized assembly. */
  function bundleOf(fn: LambdaFunction): string {
    const code = (fn.node.defaultChild as unknown as { code: { s3Key: string } }).code;
    const key = stack.resolve(code.s3Key) as string | { 'Fn::Sub': string };
    return join(
      outdir,
      `asset.${String(typeof key === 'string' ? key : key['Fn::Sub']).replace(/\.zip$/, '')}`,
      'index.js',
    );
  }

  it.each(['list_tools', 'openapi', 'mcp', 'complete', 'draw_lots', 'get_balance', 'get_operation', 'erase'])(
    '%s initializes with the packages the Lambda runtime provides: every other one it loads is bundled',
    async (name) => {
      const fn = functionsOf(retrysafe)[name]!;
      // The function's environment as deployed; what CloudFormation resolves (table names, the queue's
      // URL) stands as a URL.
      const variables = Template.fromStack(stack).toJSON().Resources[stack.getLogicalId(fn.node.defaultChild as never)]
        .Properties.Environment.Variables as Record<string, unknown>;
      const environment = Object.fromEntries(
        Object.entries(variables).map(([key, value]) => [
          key,
          typeof value === 'string' ? value : 'https://deploy-time.example/value',
        ]),
      );

      const error = await initError(bundleOf(fn), environment);

      expect(error).toBeUndefined();
    },
  );
});

// Found by the review of issue 15 (installable package): what an app adopting the construct for its own tools
// would hit.

/** The Retrysafe construct in stack `id` of `app`, over one tool and one table of the app's own; no bundling. */
function namedAppStack(app: App, id: string, overrides: Partial<RetrysafeProps> = {}) {
  const stack = new Stack(app, id, { env: { account: '123456789012', region: 'eu-west-1' } });
  const outbox = tableFromDefinition(stack, 'Outbox', TABLES.outbox);
  const retrysafe = new Retrysafe(stack, 'Tools', {
    tools: [{ tool: sendReminder, entry: REMINDER_ENTRY }],
    entries: {
      mcp: join(EXAMPLE_LAMBDAS, 'mcp.ts'),
      complete: join(EXAMPLE_LAMBDAS, 'complete.ts'),
      list_tools: join(EXAMPLE_LAMBDAS, 'list_tools.ts'),
      openapi: join(EXAMPLE_LAMBDAS, 'openapi.ts'),
    },
    tables: { outbox },
    issuer: 'https://issuer.example',
    audience: 'app',
    ...overrides,
  });
  // biome-ignore lint/suspicious/noExplicitAny: CloudFormation properties are asserted structurally
  const resources = Template.fromStack(stack).toJSON().Resources as Record<string, { Type: string; Properties: any }>;
  return { stack, retrysafe, resources };
}

describe('two deployments of the construct in one account', () => {
  // A team's dev and prod stacks (or two teams' apps, or this repository's example stack next to an app)
  // in one account: CloudWatch dashboard names are unique per account, so the second stack's
  // AWS::CloudWatch::Dashboard fails to create; and every alarm reads metrics of service=retrysafe, so
  // one deployment's alarms fire on the other's calls. The construct has no prop to tell them apart.
  it('each stack gets a dashboard of its own', () => {
    const names = ['Dev', 'Prod'].map((id) => {
      const { resources } = namedAppStack(new App({ context: { 'aws:cdk:bundling-stacks': [] } }), id);
      const dashboards = Object.values(resources).filter((r) => r.Type === 'AWS::CloudWatch::Dashboard');
      return dashboards.map((d) => d.Properties.DashboardName);
    });

    expect(names[0]).toHaveLength(1);
    expect(names[0]![0]).not.toEqual(names[1]![0]);
  });

  it("each stack's functions write their metrics under a service of their own", () => {
    const services = ['Dev', 'Prod'].map((id) => {
      const { stack, retrysafe, resources } = namedAppStack(
        new App({ context: { 'aws:cdk:bundling-stacks': [] } }),
        id,
      );
      const fn = resources[stack.getLogicalId(retrysafe.functions.send_reminder!.node.defaultChild as never)]!;
      return fn.Properties.Environment.Variables.POWERTOOLS_SERVICE_NAME;
    });

    expect(services[0]).not.toEqual(services[1]);
  });
});

describe('the MCP function’s JWKS location', () => {
  // docs/deploy.md: "Any OIDC provider that signs its tokens with RSA (RS256) works". The JWT
  // authorizer discovers the keys; the MCP function fetches `<issuer>/.well-known/jwks.json` unless
  // JWKS_URL is set — Cognito's and Auth0's location, not Okta's (/v1/keys), Keycloak's or Entra ID's.
  // RetrysafeProps has issuer, audience, tenantClaim and no JWKS location; the construct sets no JWKS_URL.
  it("an Okta issuer: the MCP function is given the issuer's JWKS location", () => {
    const okta = 'https://dev-1.okta.com/oauth2/default';
    const { stack, retrysafe, resources } = namedAppStack(
      new App({ context: { 'aws:cdk:bundling-stacks': [] } }),
      'Okta',
      {
        issuer: okta,
        ...({ jwksUrl: `${okta}/v1/keys` } as Partial<RetrysafeProps>),
      },
    );
    const mcp = resources[stack.getLogicalId(retrysafe.functions.mcp!.node.defaultChild as never)]!;

    expect(mcp.Properties.Environment.Variables.JWKS_URL).toBe(`${okta}/v1/keys`);
  });
});
