/** `npm run bench:attach`: only the attach measurement (bench/attach.ts), on a DynamoDB Local of its own. */
import { TABLES } from '../app/tables';
import { commandFlags } from '../bin/cli-args';
import { startDynamoDBLocal } from '../lib/local/dynamodb-local';
import { applyLocalDefaults } from '../lib/local/local-env';
import { createDynamoDBClient } from '../lib/store/client';
import { createTables } from '../lib/store/create-tables';
import { benchAttach } from './attach';

commandFlags(
  `usage: npm run bench:attach

Attach against pending: concurrent duplicate pairs against tools of known latency on DynamoDB Local, with
attach on and off — agent round trips per intent, reads per duplicate, the duplicate's Lambda time.`,
  {},
);

async function main(): Promise<void> {
  applyLocalDefaults(process.env, 'SILENT', TABLES);
  const local = process.env.DYNAMODB_ENDPOINT ? undefined : await startDynamoDBLocal();
  if (local) process.env.DYNAMODB_ENDPOINT = local.endpoint;
  const client = createDynamoDBClient(process.env);
  try {
    await createTables(client, TABLES);
    await benchAttach(process.env);
  } finally {
    client.destroy();
    await local?.stop();
  }
}

main().catch((error) => {
  console.error(error);
  process.exitCode = 1;
});
