import './source-paths';
import { TABLES } from '../../app/tables';
import { startTestStore } from '../../lib/testing';

/**
 * One in-memory DynamoDB Local for the whole run, on a free port, with the tables from the shared
 * definitions — started by `retrysafe/testing`, as an app's own tests start theirs. Workers inherit
 * DYNAMODB_ENDPOINT from this process's environment.
 */
export default async function globalSetup(): Promise<void> {
  await import('./env');
  const store = await startTestStore({ tables: TABLES, accessKeyId: process.env.AWS_ACCESS_KEY_ID });
  (globalThis as { testStore?: typeof store }).testStore = store;
  process.env.DYNAMODB_ENDPOINT = store.endpoint;
}
