/**
 * `npm start`: DynamoDB Local (in memory, or `--data DIR` on disk; none when DYNAMODB_ENDPOINT is set),
 * the tables, and the HTTP API on 127.0.0.1:${PORT:-3000}, served by the same handlers Lambda runs.
 */
import { parseArgs } from 'node:util';
import { HANDLERS } from '../lambdas';
import { startLocalApi } from '../lib/local/api-server';
import { DevSigningKey } from '../lib/local/dev-auth';
import { startDynamoDBLocal } from '../lib/local/dynamodb-local';
import { applyLocalDefaults } from '../lib/local/local-env';
import { createDynamoDBClient } from '../lib/store/client';
import { createTables } from '../lib/store/create-tables';

async function main(): Promise<void> {
  const { values } = parseArgs({ options: { data: { type: 'string' }, port: { type: 'string' } } });
  applyLocalDefaults(process.env, 'INFO');

  const dynamodb = process.env.DYNAMODB_ENDPOINT ? undefined : await startDynamoDBLocal({ dbPath: values.data });
  if (dynamodb) process.env.DYNAMODB_ENDPOINT = dynamodb.endpoint;
  const client = createDynamoDBClient();
  await createTables(client);
  client.destroy();

  const key = await DevSigningKey.loadOrCreate();
  const api = await startLocalApi({
    handlers: HANDLERS,
    verify: (token) => key.verify(token),
    port: Number(values.port ?? process.env.PORT ?? 3000),
  });

  let stopping = false;
  async function stop(code: number): Promise<void> {
    if (stopping) return;
    stopping = true;
    await api.close().catch(() => undefined);
    await dynamodb?.stop();
    process.exit(code);
  }
  process.on('SIGINT', () => void stop(0));
  process.on('SIGTERM', () => void stop(0));
  process.on('uncaughtException', (error) => {
    console.error(error);
    void stop(1);
  });

  console.log(`retrysafe local API: ${api.url}`);
  console.log(
    `DynamoDB: ${process.env.DYNAMODB_ENDPOINT}${dynamodb ? (values.data ? ` (DynamoDB Local, data in ${values.data})` : ' (DynamoDB Local, in memory)') : ''}`,
  );
  console.log('\nMint a token:\n  TOKEN=$(npm run -s token -- --tenant acme --user ada)');
  console.log(
    `\nTry it:\n  curl -s ${api.url}/tools/create_invoice -H "Authorization: Bearer $TOKEN" \\\n` +
      `    -H 'content-type: application/json' -d '{"idempotency_key":"k1","customer":"cus_ada","amount":4200}'`,
  );
  console.log('\nCtrl-C stops the server and DynamoDB Local.');
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
