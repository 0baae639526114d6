/**
 * The mutation run's tests on the in-memory engine (jest.mutate.config.js, `RETRYSAFE_TEST_ENGINE=memory`,
 * the default of `npm run mutate`): a `setupFilesAfterEnv` module, so each test file gets an engine of its
 * own in its own module registry, as a fresh DynamoDB Local with the tables `npm test`'s global setup
 * creates. Every DynamoDB and DynamoDB Streams client the test file and lib/ build from `DYNAMODB_ENDPOINT`
 * reaches it through the SDK's own handler, diverted (`divertDefaultHandler`); lib/ is not changed, and
 * the explorer's worlds (a namespace of their own, as on Local) reach it the same way.
 *
 * The engine answers only what it models (test/explore/engine, cross-checked against DynamoDB Local in
 * test/explore/engine.test.ts). A request outside the model is never answered as DynamoDB would: the
 * request throws, and the test file fails in `afterAll` naming it — a runtime error of the suite, which
 * Stryker reports as such (`RuntimeError`), not as a mutant killed.
 */
import { TABLES } from '../../app/tables';
import { startTestStore, type TestStore } from '../../lib/testing';
import { divertDefaultHandler, MEMORY_ENDPOINT, MemoryDynamoDB, memoryRequestHandler } from '../explore/engine';

process.env.DYNAMODB_ENDPOINT = MEMORY_ENDPOINT;

const unmodelled: string[] = [];
const engine = memoryRequestHandler(new MemoryDynamoDB(), unmodelled);
divertDefaultHandler(MEMORY_ENDPOINT, {
  async handle(request) {
    const before = unmodelled.length;
    const answer = await engine.handle(request);
    if (unmodelled.length > before) throw new Error(unmodelled.at(-1));
    return answer;
  },
});

let store: TestStore | undefined;

beforeAll(async () => {
  store = await startTestStore({
    tables: TABLES,
    endpoint: MEMORY_ENDPOINT,
    accessKeyId: process.env.AWS_ACCESS_KEY_ID,
  });
});

afterAll(async () => {
  await store?.stop();
  if (unmodelled.length > 0) {
    throw new Error(
      `the in-memory engine met ${unmodelled.length} request(s) it does not model — run this file on DynamoDB Local (RETRYSAFE_TEST_ENGINE=local) or teach the model, cross-checked:\n${[...new Set(unmodelled)].join('\n')}`,
    );
  }
});
