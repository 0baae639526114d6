/**
 * The app's own CDK app: its tables and the Retrysafe construct over its tools. `npx cdk synth` works
 * offline; to deploy, set the issuer and audience of your OIDC provider (`-c issuer=… -c audience=…`).
 */
import { join } from 'node:path';
import { App, Stack } from 'aws-cdk-lib';
import { definedTable, Retrysafe } from 'retrysafe/cdk';
import { TABLES } from '../src/tables';
import { logCall } from '../src/tools/log-call';
import { openAccount } from '../src/tools/open-account';

const app = new App();
const stack = new Stack(app, 'OwnTools', { description: 'An app of its own on retrysafe' });
const lambdas = join(__dirname, '..', 'src', 'lambdas');
const entry = (name: string) => join(lambdas, `${name}.ts`);

new Retrysafe(stack, 'Tools', {
  tools: [
    { tool: openAccount, entry: entry('open_account') },
    { tool: logCall, entry: entry('log_call') },
  ],
  entries: {
    mcp: entry('mcp'),
    complete: entry('complete'),
    list_tools: entry('list_tools'),
    openapi: entry('openapi'),
  },
  tables: {
    accounts: definedTable(stack, 'Accounts', TABLES.accounts),
    calls: definedTable(stack, 'Calls', TABLES.calls),
  },
  issuer: app.node.tryGetContext('issuer') ?? 'https://cognito-idp.eu-west-1.amazonaws.com/eu-west-1_example',
  audience: app.node.tryGetContext('audience') ?? 'own-tools',
});
