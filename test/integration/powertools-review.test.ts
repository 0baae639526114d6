// Review of issue 35, deliverable 4 (Powertools both ways on one table): failing tests, each one a defect
// found by a fresh-eye review (h-review35). Powertools 2.35's own `makeIdempotent` and
// `DynamoDBPersistenceLayer` and retrysafe's runtime over one DynamoDB Local table, Powertools configured as
// docs/design.md says (as test/integration/powertools.test.ts does).
import { randomUUID } from 'node:crypto';
import { IdempotencyConfig, makeIdempotent } from '@aws-lambda-powertools/idempotency';
import { DynamoDBPersistenceLayer } from '@aws-lambda-powertools/idempotency/dynamodb';
import { recordKeyOf } from '../../lib/idempotency/derivation';
import { fingerprint } from '../../lib/idempotency/fingerprint';
import { powertoolsResponseHook } from '../../lib/idempotency/powertools';
import { createProtocolWorld, deadline, identity, type ProtocolWorld } from '../helpers/protocol-world';
import { noteTool } from '../helpers/tools';

let world: ProtocolWorld;
beforeAll(() => {
  world = createProtocolWorld();
});
afterAll(() => world.destroy());

const TTL_SECONDS = 3_600;
const TOOL = 'send_note';

function callOf(text = 'hello') {
  const caller = identity();
  const key = `k-${randomUUID()}`;
  const args = { text };
  return {
    caller,
    key,
    input: { idempotency_key: key, ...args },
    event: { scope: [caller.tenant, caller.user, key], fingerprint: fingerprint(args) },
    recordKey: recordKeyOf(TOOL, [caller.tenant, caller.user, key]),
  };
}

/** Powertools' handler around `fn`, configured as docs/design.md says, `powertoolsResponseHook` included. */
function powertools<R>(fn: () => Promise<R>) {
  const persistenceStore = new DynamoDBPersistenceLayer({
    tableName: world.idempotencyTable.tableName,
    awsSdkV3Client: world.client,
  });
  const config = new IdempotencyConfig({
    eventKeyJmesPath: 'scope',
    payloadValidationJmesPath: 'fingerprint',
    hashFunction: 'sha256',
    throwOnNoIdempotencyKey: true,
    expiresAfterSeconds: TTL_SECONDS,
    responseHook: powertoolsResponseHook,
  });
  const run = jest.fn(async (_event: unknown, _context: { getRemainingTimeInMillis(): number }) => fn());
  return { handler: makeIdempotent(run, { persistenceStore, config, keyPrefix: TOOL }), run };
}

describe('review 35: powertoolsResponseHook on a record Powertools’ own handler stored', () => {
  // The hook cannot tell who stored a record (`decodeOutcome` accepts any object with a boolean `replayed`),
  // so a Powertools handler whose own result has a string `receipt` and a boolean `replayed` — a payment
  // function's natural shape — is taken for retrysafe's envelope on its own replay.
  it.each([
    ['a receipt number', { receipt: 'rcpt_42', replayed: false, amount: 100 }],
    ['a receipt that is JSON text', { receipt: '{"id":"r1"}', replayed: false, amount: 100 }],
    ['a failure field of its own', { failure: 'card_declined', replayed: false, retry: true }],
  ])('replays the handler’s own result as it returned it (%s)', async (_case, result) => {
    // prepare
    const call = callOf();
    const { handler, run } = powertools(async () => result);
    const first = await handler(call.event, deadline());

    // act
    const replay = await handler(call.event, deadline()).catch((error: unknown) => error);

    // assess
    expect(first).toEqual(result);
    expect(replay).toEqual(result);
    expect(run).toHaveBeenCalledTimes(1);
  });

  it('gives the same receipt on both sides: retrysafe’s replay of that record and Powertools’ own', async () => {
    // prepare
    const call = callOf();
    const result = { receipt: '{"id":"r1"}', replayed: false, amount: 100 };
    const { handler } = powertools(async () => result);
    await handler(call.event, deadline());
    const { tool } = noteTool(TOOL, undefined, { ttlSeconds: TTL_SECONDS });

    // act
    const viaRetrysafe = await world.runtime.invoke(tool, call.caller, call.input, deadline());
    const viaPowertools = await handler(call.event, deadline());

    // assess
    expect(viaRetrysafe).toMatchObject({ ok: true, idempotent: true, receipt: result });
    expect(viaPowertools).toEqual((viaRetrysafe as { receipt: unknown }).receipt);
  });
});
