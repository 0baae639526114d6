import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { App, Stack } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { TABLES } from '../../app/tables';
import { openStore } from '../../lib/cli/store';
import { CLAIM_ACTIONS } from '../../lib/infra/idempotency-table';
import { packageEntryFile, Retrysafe, type RetrysafeProps } from '../../lib/infra/retrysafe';
import { tableFromDefinition } from '../../lib/infra/table';
import type { AnyToolModule } from '../../lib/tools/tool-module';
import { sendReminder } from '../fixtures/tools/send-reminder';

const LAMBDAS = join(__dirname, '..', '..', 'lib', 'lambda', 'entries');
/** The example app's entries: an app's own mcp, completer and listings, as the construct wants them. */
const EXAMPLE_LAMBDAS = join(__dirname, '..', '..', 'lambdas');
const FIXTURE_LAMBDAS = join(__dirname, '..', 'fixtures', 'lambdas');

// biome-ignore lint/suspicious/noExplicitAny: CloudFormation properties are asserted structurally
type Resources = Record<string, { Type: string; Properties: Record<string, any> }>;

/** An app's own stack with one table and one tool of its own; bundling skipped (settings only). */
function appStack(overrides: Partial<RetrysafeProps> = {}) {
  const app = new App({ context: { 'aws:cdk:bundling-stacks': [] } });
  const stack = new Stack(app, 'App');
  const outbox = tableFromDefinition(stack, 'Outbox', TABLES.outbox);
  const retrysafe = new Retrysafe(stack, 'Tools', {
    tools: [{ tool: sendReminder, entry: join(FIXTURE_LAMBDAS, 'send_reminder.ts') }],
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
  const template = Template.fromStack(stack);
  return { stack, outbox, retrysafe, resources: template.toJSON().Resources as Resources };
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
