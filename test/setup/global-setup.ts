import './source-paths';
import { TABLES } from '../../app/tables';
import { startTestStore } from '../../lib/testing';

/**
 * One in-memory DynamoDB Local for the whole run, on a free port, with the tables from the shared
 * definitions — started by `retrysafe/testing`, as an app's own tests start theirs. Workers inherit
 * DYNAMODB_ENDPOINT from this process's environment. With `RETRYSAFE_TEST_ENDPOINT` (the mutation run,
 * which runs Jest once per mutant) the tests use that DynamoDB instead, its tables created if missing.
 */
export default async function globalSetup(): Promise<void> {
  await import('./env');
  const endpoint = process.env.RETRYSAFE_TEST_ENDPOINT || undefined;
  const store = await startTestStore({
    tables: TABLES,
    accessKeyId: process.env.AWS_ACCESS_KEY_ID,
    ...(endpoint ? { endpoint } : {}),
  });
  (globalThis as { testStore?: typeof store }).testStore = store;
  process.env.DYNAMODB_ENDPOINT = store.endpoint;
}
