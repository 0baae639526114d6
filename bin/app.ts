/**
 * The CDK app: `npx cdk synth` / `npx cdk deploy -c issuer=… -c audience=… [-c tenantClaim=…]`, or
 * `npx cdk deploy -c userPool=true` for a Cognito user pool of the stack's own that agents log in to;
 * `-c tracing=calls` traces every DynamoDB, SQS and HTTPS call, not only each invocation;
 * `-c agentCoreGateway=true` puts the tools behind an Amazon Bedrock AgentCore Gateway as well.
 * Synthesizes offline: no credentials, no context lookups. cdk-nag's AwsSolutions checks run on
 * every synth.
 */
import { App, Validations } from 'aws-cdk-lib';
import { AwsSolutionsChecks } from 'cdk-nag';
import type { TracingDepth } from 'retrysafe/cdk';
import { RetrysafeStack, type TokenIssuerProps } from '../app/stack';

const app = new App();
const context = (key: string): string | undefined => app.node.tryGetContext(key) || undefined;

// Context is strings: what the types cannot refuse here (`-c userPool=true -c issuer=…`, a reserved
// concurrency that is no number), the stack refuses up front, all in one error.
const issuerContext = { issuer: context('issuer'), audience: context('audience'), tenantClaim: context('tenantClaim') };
const tokenIssuer = (
  String(context('userPool')) === 'true' ? { userPool: true, ...issuerContext } : issuerContext
) as TokenIssuerProps;
const reservedConcurrency = context('mcpReservedConcurrency');

new RetrysafeStack(app, 'Retrysafe', {
  description: 'retrysafe: idempotent AI-agent tool calls (API Gateway, Lambda, DynamoDB)',
  ...tokenIssuer,
  destroyTablesOnRemoval: context('destroyTables') === 'true',
  // On unless `-c deletionProtection=false` (or `-c destroyTables=true`, whose stack deletion it would block).
  ...(context('deletionProtection') === undefined
    ? {}
    : { tableDeletionProtection: context('deletionProtection') !== 'false' }),
  alarmTopicArn: context('alarmTopicArn'),
  stripeSecretArn: context('stripeSecretArn'),
  // 'invocations' (the default) or 'calls'; anything else is refused by the stack.
  tracing: context('tracing') as TracingDepth | undefined,
  // `-c agentCoreGateway=true`: the tools behind an AgentCore Gateway as well (docs/deploy.md).
  agentCoreGateway: context('agentCoreGateway') === 'true',
  ...(reservedConcurrency === undefined
    ? {}
    : // A count, or the word as given ('none'; anything else is refused, named as it was written).
      {
        mcpReservedConcurrency: /^\d+$/.test(reservedConcurrency)
          ? Number(reservedConcurrency)
          : (reservedConcurrency as 'none'),
      }),
});
Validations.of(app).addPlugins(new AwsSolutionsChecks(app, { verbose: true }));
