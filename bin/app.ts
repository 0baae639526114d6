/**
 * The CDK app: `npx cdk synth` / `npx cdk deploy -c issuer=… -c audience=… [-c tenantClaim=…]`.
 * Synthesizes offline: no credentials, no context lookups. cdk-nag's AwsSolutions checks run on
 * every synth.
 */
import { App, Validations } from 'aws-cdk-lib';
import { AwsSolutionsChecks } from 'cdk-nag';
import { RetrysafeStack } from '../lib/infra/retrysafe-stack';

const app = new App();
const context = (key: string): string | undefined => app.node.tryGetContext(key) || undefined;

new RetrysafeStack(app, 'Retrysafe', {
  description: 'retrysafe: idempotent AI-agent tool calls (API Gateway, Lambda, DynamoDB)',
  issuer: context('issuer'),
  audience: context('audience'),
  tenantClaim: context('tenantClaim'),
  destroyTablesOnRemoval: context('destroyTables') === 'true',
  alarmTopicArn: context('alarmTopicArn'),
  stripeSecretArn: context('stripeSecretArn'),
});
Validations.of(app).addPlugins(new AwsSolutionsChecks(app, { verbose: true }));
