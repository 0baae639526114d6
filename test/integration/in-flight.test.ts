import { inFlightCallOf } from '../../lib/idempotency/in-flight';
import { DEFAULT_RECORD_ATTRIBUTES } from '../../lib/idempotency/protocol/record';
import { store } from '../../lib/idempotency/protocol/settle';
import type { IdempotencyTable } from '../../lib/idempotency/protocol/table';
import { createProtocolWorld, type ProtocolWorld } from '../helpers/protocol-world';
import { recordTransitions } from '../helpers/record-transitions';

/**
 * A call in flight as an operator reads it (in-flight.ts `inFlightCallOf`, for `retrysafe calls`), from an
 * item as the table holds it: live, abandoned — or nothing once it completed or its TTL passed.
 */
let world: ProtocolWorld;
let table: IdempotencyTable;
beforeAll(() => {
  world = createProtocolWorld();
  table = world.idempotencyTable;
});
afterAll(() => world.destroy());

const { firstClaim, claimed, itemOf } = recordTransitions(() => table);

describe('inFlightCallOf', () => {
  it('reads a claimed call live until its lock ends, abandoned after, and nothing past its TTL', async () => {
    const first = firstClaim(5_000);
    await claimed(first);
    const item = (await itemOf(first.recordKey))!;

    expect(inFlightCallOf(item, first.lockEndsMs - 1)).toEqual({
      state: 'live',
      recordKey: first.recordKey,
      tool: 'proto',
      user: 'ada',
      clientKey: 'k1',
      attempt: 1,
      queued: false, // its attempt holds the claim: it may be running its tool
      givesUp: undefined,
      expiresAtS: first.expiresAtS,
      createdAtMs: expect.any(Number),
      lockEndsMs: first.lockEndsMs,
    });
    expect(inFlightCallOf(item, first.lockEndsMs + 1)).toMatchObject({ state: 'abandoned' });
    expect(inFlightCallOf(item, first.expiresAtS * 1000 + 1_000)).toBeUndefined();
  });

  it('reads an abandoned call past maxAttempts as its attempts used up (the completer gives it up at its next look), and no other', async () => {
    const first = firstClaim(5_000);
    await claimed(first);
    const ninth = { ...(await itemOf(first.recordKey))!, [DEFAULT_RECORD_ATTRIBUTES.attempt]: 9 };
    const ended = first.lockEndsMs + 1;

    expect(inFlightCallOf(ninth, ended)).toMatchObject({ state: 'abandoned', attempt: 9, givesUp: 'attempts' });
    expect(inFlightCallOf(ninth, ended, {}, 12)).toMatchObject({ state: 'abandoned', givesUp: undefined });
    expect(inFlightCallOf(ninth, first.lockEndsMs - 1)).toMatchObject({ state: 'live', givesUp: undefined });
    const eighth = { ...ninth, [DEFAULT_RECORD_ATTRIBUTES.attempt]: 8 };
    expect(inFlightCallOf(eighth, ended)).toMatchObject({ state: 'abandoned', givesUp: undefined });
  });

  it('reads nothing for a completed call or an item no claim wrote', async () => {
    const first = firstClaim();
    const own = await claimed(first);
    await store(
      table,
      own,
      { receipt: '{}', replayed: false },
      { expiresAtS: first.expiresAtS, completedAtMs: Date.now() },
    );

    expect(inFlightCallOf((await itemOf(first.recordKey))!, Date.now())).toBeUndefined();
    expect(inFlightCallOf({ id: 'x', note: 'not a call' }, Date.now())).toBeUndefined();
  });
});
