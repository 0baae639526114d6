/**
 * The app's own CDK app: its tables and the Retrysafe construct over its tools. `npx cdk synth` works
 * offline; to deploy, set the issuer and audience of your OIDC provider (`-c issuer=… -c audience=…`).
 */
import { join } from 'node:path';
import { App, Stack } from 'aws-cdk-lib';
import { definedTable, eraseAccessOf, Retrysafe } from 'retrysafe/cdk';
import { READS } from '../src/reads';
import { TABLES } from '../src/tables';
import { logCall } from '../src/tools/log-call';
import { openAccount } from '../src/tools/open-account';
import { pushContact } from '../src/tools/push-contact';

const app = new App();
const stack = new Stack(app, 'OwnTools', { description: 'An app of its own on retrysafe' });
const lambdas = join(__dirname, '..', 'src', 'lambdas');
const entry = (name: string) => join(lambdas, `${name}.ts`);
const crmUrl = app.node.tryGetContext('crmUrl') ?? 'https://crm.example.com/api';

new Retrysafe(stack, 'Tools', {
  tools: [
    { tool: openAccount, entry: entry('open_account') },
    { tool: logCall, entry: entry('log_call') },
    // The CRM's URL, for every function that may run push_contact (its own, the MCP endpoint, the completer).
    { tool: pushContact, entry: entry('push_contact'), needs: { environment: { CRM_URL: crmUrl } } },
  ],
  reads: READS.map((read) => ({ read, entry: entry(read.name) })),
  entries: {
    mcp: entry('mcp'),
    complete: entry('complete'),
    list_tools: entry('list_tools'),
    openapi: entry('openapi'),
    erase: entry('erase'),
  },
  tables: {
    accounts: definedTable(stack, 'Accounts', TABLES.accounts),
    calls: definedTable(stack, 'Calls', TABLES.calls),
  },
  // Tenant erase reaches the tables whose schema names the tenant (src/tables.ts), with what it sends them.
  eraseAccess: eraseAccessOf(TABLES),
  issuer: app.node.tryGetContext('issuer') ?? 'https://cognito-idp.eu-west-1.amazonaws.com/eu-west-1_example',
  audience: app.node.tryGetContext('audience') ?? 'own-tools',
});
