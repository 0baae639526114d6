// Review of issue 35, deliverable 4 (Powertools both ways on one table): failing tests, each one a defect
// found by a fresh-eye review (h-review35). Powertools 2.35's own `makeIdempotent` and
// `DynamoDBPersistenceLayer` and retrysafe's runtime over one DynamoDB Local table, Powertools configured as
// docs/design.md says (as test/integration/powertools.test.ts does).
import { randomUUID } from 'node:crypto';
import { IdempotencyConfig, makeIdempotent } from '@aws-lambda-powertools/idempotency';
import { DynamoDBPersistenceLayer } from '@aws-lambda-powertools/idempotency/dynamodb';
import { eraseTenant } from '../../lib/admin/erase-tenant';
import { nextAfterRead } from '../../lib/api/next-step';
import { recordKeyOf } from '../../lib/idempotency/derivation';
import { fingerprint } from '../../lib/idempotency/fingerprint';
import { powertoolsResponseHook } from '../../lib/idempotency/powertools';
import { readOperation } from '../../lib/reads/operation';
import { createProtocolWorld, deadline, identity, type ProtocolWorld } from '../helpers/protocol-world';
import { gate, noteTool } from '../helpers/tools';

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

describe('review 35: the poll of a call Powertools’ handler left in flight (stalled, reason powertools)', () => {
  // readOperation's hint says a resend waits for the TTL (STALLED_HINTS.powertools); the answer's `next`
  // (nextAfterOperation('stalled')) tells the agent to resend now "to run it again (it cannot act twice)":
  // the resend answers `pending` for the rest of the TTL, and past it the call runs under retrysafe's
  // downstream key, not the one Powertools' function used — it can act twice.
  it('tells the agent when asking again can change anything (the TTL), and promises no single effect', async () => {
    // prepare: Powertools' handler claims with 100 ms left, and its worker never comes back
    const call = callOf();
    noteTool(TOOL, undefined, { ttlSeconds: TTL_SECONDS });
    const dead = gate();
    const { handler, run } = powertools(async () => {
      await dead.opened;
      return { note_id: 'late' };
    });
    const dying = handler(call.event, deadline(100));
    while (run.mock.calls.length === 0) await new Promise((resolve) => setTimeout(resolve, 10));
    await new Promise((resolve) => setTimeout(resolve, 200));

    // act: the poll as GET /tools/{tool}/operations/{key} and get_operation answer it
    const answer = await readOperation({ runtime: world.runtime, toolNames: [TOOL] }, call.caller, TOOL, call.key);
    const next = nextAfterRead(answer as Parameters<typeof nextAfterRead>[0]);
    dead.open();
    await dying;

    // assess
    expect(answer).toMatchObject({ ok: true, status: 'stalled' });
    expect(next.message).not.toMatch(/cannot act twice/);
    expect(next.after_ms).toBeGreaterThan((TTL_SECONDS - 60) * 1000);
  });
});

describe('review 35: a tenant’s erase, on records Powertools’ handler wrote for that tenant', () => {
  // docs/design.md: "Erase tombstones a completed Powertools record and keeps one in flight ... every app
  // table waits for it". The operator's erase (`eraseTenant`, the admin Lambda and `retrysafe erase`)
  // finds records by a Scan on `tenant`, which Powertools' layer never writes: it sees neither.
  it('reports a Powertools call of the tenant still in flight (so that the app’s tables wait for it)', async () => {
    // prepare: Powertools' handler holds the key for the tenant's call
    const call = callOf();
    const held = gate();
    const { handler, run } = powertools(async () => {
      await held.opened;
      return { note_id: 'n' };
    });
    const running = handler(call.event, deadline(5_000));
    while (run.mock.calls.length === 0) await new Promise((resolve) => setTimeout(resolve, 10));

    // act
    const report = await eraseTenant(
      world.client,
      { tenant: call.caller.tenant, includeDomain: true },
      {
        IDEMPOTENCY_TABLE: world.idempotencyTable.tableName,
      },
    );
    held.open();
    await running;

    // assess
    expect(report.tables.idempotency).toMatchObject({ found: 1, inFlight: 1 });
  });
});
