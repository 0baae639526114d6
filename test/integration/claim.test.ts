// Rule 2 (docs/state-machine.md): every takeover names the claim it replaces; every lock ends 10 s before its record’s TTL.

import { randomUUID } from 'node:crypto';
import { DeleteItemCommand, GetItemCommand, PutItemCommand } from '@aws-sdk/client-dynamodb';
import { marshall, unmarshall } from '@aws-sdk/util-dynamodb';
import { StoreWriteError } from '../../lib/idempotency/answers';
import { expiredFromMs } from '../../lib/idempotency/call-state';
import { ConflictError, InternalError, NotFoundError, UnavailableError } from '../../lib/idempotency/errors';
import { type ClaimRequest, claimCall } from '../../lib/idempotency/protocol/claim';
import { type Claim, claim, takeOver } from '../../lib/idempotency/protocol/claim-writes';
import { tombstone } from '../../lib/idempotency/protocol/erase';
import { store } from '../../lib/idempotency/protocol/settle';
import type { IdempotencyTable } from '../../lib/idempotency/protocol/table';
import { createProtocolWorld, type ProtocolWorld } from '../helpers/protocol-world';

/**
 * The claim phase's decisions (protocol/claim.ts `claimCall`) on DynamoDB Local: which write an attempt sends for each
 * record in its way, and what it answers — a first claim, a takeover, a resume of the completer's, and the
 * records that change between the write that read them and the answer. Each test counts the writes, since
 * the condition alone would refuse a needless one: a needless write is a write unit on the hot path.
 */
let world: ProtocolWorld;
let table: IdempotencyTable;
/** Commands sent to the idempotency table, by name, in order. */
let sent: string[];
/** Runs before a command is sent (to change the world between two writes of one attempt). */
let before: (command: string) => Promise<void> | void;
/** Runs after a command's answer, or its refusal (to move the clock while the write was on its way). */
let after: (command: string) => void;
/** How far the clock is moved ahead. */
let offsetMs: number;
/** While true, what is sent is the test's own seeding: not counted, no hooks. */
let seeding = false;

const MIDDLEWARE = 'claimCallObserver';
beforeAll(() => {
  world = createProtocolWorld();
  table = world.idempotencyTable;
  world.client.middlewareStack.add(
    (next, context) => async (args) => {
      const command = context.commandName ?? '';
      if (seeding || (args.input as { TableName?: string }).TableName !== table.tableName) return next(args);
      await before(command);
      sent.push(command);
      try {
        return await next(args);
      } finally {
        // A refused condition is thrown (ConditionalCheckFailedException): its answer came all the same.
        after(command);
      }
    },
    { step: 'initialize', name: MIDDLEWARE },
  );
});
afterAll(() => {
  world.client.middlewareStack.remove(MIDDLEWARE);
  world.destroy();
});
beforeEach(() => {
  sent = [];
  before = () => undefined;
  after = () => undefined;
  offsetMs = 0;
  const now = Date.now.bind(Date);
  jest.spyOn(Date, 'now').mockImplementation(() => now() + offsetMs);
});
afterEach(() => jest.restoreAllMocks());

const TTL_SECONDS = 3_600;

/** An attempt's claim request for a fresh record: its lock ends `lockMs` from now. */
function request(overrides: Partial<ClaimRequest> = {}, lockMs = 10_000): ClaimRequest {
  const now = Date.now();
  return {
    recordKey: `claimcall#${randomUUID()}`,
    tenant: `t-${randomUUID()}`,
    tool: 'claimcall',
    validation: 'v1',
    expiresAtS: Math.round(now / 1000 + TTL_SECONDS),
    lockEndsMs: now + lockMs,
    ttlSeconds: TTL_SECONDS,
    call: () => '{"args":{},"key":"k1","user":"ada"}',
    resume: undefined,
    ...overrides,
  };
}

async function itemOf(key: string): Promise<Record<string, unknown> | undefined> {
  const { Item } = await seed(() =>
    world.client.send(
      new GetItemCommand({ TableName: table.tableName, Key: { id: { S: key } }, ConsistentRead: true }),
    ),
  );
  return Item && unmarshall(Item);
}

/** Writes the world a test starts from (or changes it mid-attempt), unobserved. */
async function seed<T>(write: () => Promise<T>): Promise<T> {
  seeding = true;
  try {
    return await write();
  } finally {
    seeding = false;
  }
}

/** A record claimed by another attempt whose lock ended a second ago (abandoned), written directly. */
function abandonedClaim(of: ClaimRequest): Promise<Claim> {
  return seed(async () => {
    const now = Date.now();
    const result = await claim(table, { ...of, call: of.call(), lockEndsMs: now - 1_000 }, now);
    if (result.kind !== 'claimed') throw new Error('the seed claim was refused');
    return result.claim;
  });
}

/** A record claimed by another attempt whose lock is live. */
function liveClaim(of: ClaimRequest): Promise<Claim> {
  return seed(async () => {
    const result = await claim(table, { ...of, call: of.call() }, Date.now());
    if (result.kind !== 'claimed') throw new Error('the seed claim was refused');
    return result.claim;
  });
}

/** A record another attempt claimed and completed, its TTL `of.expiresAtS`. */
async function completed(of: ClaimRequest): Promise<Claim> {
  const held = await liveClaim(of);
  const done = await seed(() =>
    store(
      table,
      held,
      { receipt: '{"done":true}', replayed: false },
      { expiresAtS: of.expiresAtS, completedAtMs: Date.now() },
    ),
  );
  if (done !== 'stored') throw new Error('the seed store was refused');
  return held;
}

/** What the attempt itself sent (the seeding is not counted). */
function attemptSends(): string[] {
  return sent;
}

function errorOf(phase: Awaited<ReturnType<typeof claimCall>>): unknown {
  if (phase.kind !== 'failed') throw new Error(`expected a failed phase, got ${phase.kind}`);
  return phase.error;
}

describe('a first claim', () => {
  it('claims an absent record with one PutItem: attempt 1, its lock and TTL as asked', async () => {
    const asked = request();

    const phase = await claimCall(table, asked);

    expect(phase).toMatchObject({ kind: 'claimed', claim: { recordKey: asked.recordKey, attempt: 1 } });
    expect(attemptSends()).toEqual(['PutItemCommand']);
    expect(await itemOf(asked.recordKey)).toMatchObject({
      status: 'INPROGRESS',
      in_progress_expiration: asked.lockEndsMs,
      expiration: asked.expiresAtS,
    });
  });

  it('refuses a lock that ends now or before, writing nothing (a claim must hold a future lock)', async () => {
    const now = Date.now();
    jest.spyOn(Date, 'now').mockReturnValue(now);
    const atNow = request({ lockEndsMs: now });
    const past = request({ lockEndsMs: now - 1 });

    for (const asked of [atNow, past]) {
      const error = errorOf(await claimCall(table, asked));
      expect(error).toBeInstanceOf(UnavailableError);
      expect((error as Error).message).toMatch(/no time was left/);
      expect(await itemOf(asked.recordKey)).toBeUndefined();
    }
    expect(attemptSends()).toEqual([]);
    // One millisecond later is a lock: the boundary is the instant itself.
    expect(await claimCall(table, request({ lockEndsMs: now + 1 }))).toMatchObject({ kind: 'claimed' });
  });

  it('a failed write (not a condition) is a StoreWriteError of the claim, the cause kept', async () => {
    const failure = new Error('throttled');
    before = (command) => {
      if (command === 'PutItemCommand') throw failure;
    };

    const error = errorOf(await claimCall(table, request()));

    expect(error).toBeInstanceOf(StoreWriteError);
    expect(error).toMatchObject({ write: 'claim', cause: failure });
    expect((error as Error).message).toBe('the idempotency store failed the claim write');
  });
});

describe('the record in the way of a claim', () => {
  it('live, same arguments: pending until its lock ends, after one write', async () => {
    const asked = request();
    const held = await liveClaim(asked);

    const phase = await claimCall(table, asked);

    expect(phase).toMatchObject({ kind: 'pending', until: { atMs: asked.lockEndsMs } });
    // Not a takeover tried on a live lock: the refused PutItem told the attempt everything.
    expect(attemptSends()).toEqual(['PutItemCommand']);
    expect(await itemOf(asked.recordKey)).toMatchObject({ claim_id: held.claimId, attempt: 1 });
  });

  it('live or abandoned, other arguments: conflict, after one write, the record unchanged', async () => {
    for (const seed of [liveClaim, abandonedClaim]) {
      const asked = request();
      await seed(asked);
      const stored = await itemOf(asked.recordKey);
      sent = [];

      const error = errorOf(await claimCall(table, { ...asked, validation: 'v2' }));

      expect(error).toBeInstanceOf(ConflictError);
      expect(attemptSends()).toEqual(['PutItemCommand']);
      expect(await itemOf(asked.recordKey)).toEqual(stored);
    }
  });

  it('abandoned, same arguments: taken over (attempt 2) with one PutItem and one UpdateItem', async () => {
    const asked = request();
    const held = await abandonedClaim(asked);

    const phase = await claimCall(table, asked);

    expect(phase).toMatchObject({ kind: 'claimed', claim: { attempt: 2, callId: held.callId } });
    expect(attemptSends()).toEqual(['PutItemCommand', 'UpdateItemCommand']);
  });

  it('completed, same arguments: its outcome replayed', async () => {
    const asked = request();
    await completed(asked);

    const phase = await claimCall(table, asked);

    expect(phase).toMatchObject({
      kind: 'outcome',
      outcome: { receipt: '{"done":true}', replayed: true },
      replay: 'client_key',
    });
  });

  it('erased: not found, nothing written', async () => {
    const asked = request();
    await completed(asked);
    expect(await seed(() => tombstone(table, asked.recordKey))).toBe('erased');
    const stored = await itemOf(asked.recordKey);

    const error = errorOf(await claimCall(table, asked));

    expect(error).toBeInstanceOf(NotFoundError);
    expect((error as Error).message).toMatch(/erased/);
    expect(await itemOf(asked.recordKey)).toEqual(stored);
  });

  it('not a call record (an item neither a claim nor Powertools’ handler wrote): internal, unchanged', async () => {
    // An attempt count without a call instance: no claim writes one without the other, and Powertools'
    // handler writes neither (its records are read: test/integration/powertools.test.ts).
    const asked = request();
    const item = { id: asked.recordKey, status: 'INPROGRESS', expiration: asked.expiresAtS, attempt: 1 };
    await seed(() => world.client.send(new PutItemCommand({ TableName: table.tableName, Item: marshall(item) })));

    const error = errorOf(await claimCall(table, asked));

    expect(error).toBeInstanceOf(InternalError);
    expect(await itemOf(asked.recordKey)).toEqual(item);
  });

  it('released by its slow holder between the refused claim and the takeover: the key is free, claimed again', async () => {
    const asked = request();
    await abandonedClaim(asked);
    before = async (command) => {
      if (command !== 'UpdateItemCommand') return;
      before = () => undefined;
      // The holder's business error came back past its lock: it releases (settle.ts `release` deletes).
      await seed(() =>
        world.client.send(
          new DeleteItemCommand({ TableName: table.tableName, Key: marshall({ id: asked.recordKey }) }),
        ),
      );
    };

    const phase = await claimCall(table, asked);

    expect(phase).toMatchObject({ kind: 'claimed', claim: { attempt: 1 } });
    expect(attemptSends()).toEqual(['PutItemCommand', 'UpdateItemCommand', 'PutItemCommand']);
    expect(await itemOf(asked.recordKey)).toMatchObject({ status: 'INPROGRESS', attempt: 1 });
  });

  it('taken over by another caller between the refused claim and the takeover: pending on that caller’s lock', async () => {
    const asked = request();
    const held = await abandonedClaim(asked);
    const otherLockEndsMs = Date.now() + 7_000;
    before = async (command) => {
      if (command !== 'UpdateItemCommand') return;
      before = () => undefined;
      await seed(() =>
        takeOver(table, { ...asked, fromClaimId: held.claimId, lockEndsMs: otherLockEndsMs }, Date.now()),
      );
    };

    const phase = await claimCall(table, asked);

    expect(phase).toMatchObject({ kind: 'pending', until: { atMs: otherLockEndsMs } });
    expect(await itemOf(asked.recordKey)).toMatchObject({ attempt: 2 });
  });

  it('expired while it was read: claimed again on the next try', async () => {
    const asked = request();
    await completed({ ...asked, expiresAtS: Math.ceil(Date.now() / 1000) + 1 });
    after = (command) => {
      // The refused PutItem saw it unexpired; by the time its answer is read, its TTL passed.
      if (command === 'PutItemCommand' && sent.length === 1) offsetMs += 3_000;
    };

    const phase = await claimCall(table, { ...asked, lockEndsMs: Date.now() + 60_000 });

    expect(phase).toMatchObject({ kind: 'claimed', claim: { attempt: 1 } });
    expect(attemptSends()).toEqual(['PutItemCommand', 'PutItemCommand']);
  });

  it('expiring as it is read, every time: unavailable after three tries (Powertools’ MAX_RETRIES + 1)', async () => {
    const asked = request({ lockEndsMs: Date.now() + 600_000 });
    before = async (command) => {
      // Each time, another caller's completed call is in the way, its TTL this very second…
      if (command === 'PutItemCommand') await completed({ ...asked, expiresAtS: Math.ceil(Date.now() / 1000) });
    };
    after = (command) => {
      // …and past by the time the refusal is read.
      if (command === 'PutItemCommand') offsetMs += 2_000;
    };

    const error = errorOf(await claimCall(table, asked));

    expect(error).toBeInstanceOf(UnavailableError);
    expect((error as Error).message).toMatch(/changed while it was read/);
    expect(attemptSends()).toEqual(['PutItemCommand', 'PutItemCommand', 'PutItemCommand']);
  });
});

describe('a record no claim of this version wrote', () => {
  it('left in progress by Powertools’ handler, its lock ended: pending for the rest of its TTL (nothing runs it before), run anew after', async () => {
    const asked = request();
    await seed(() =>
      world.client.send(
        new PutItemCommand({
          TableName: table.tableName,
          Item: marshall({
            id: asked.recordKey,
            status: 'INPROGRESS',
            expiration: asked.expiresAtS,
            in_progress_expiration: Date.now() - 1_000,
            validation: asked.validation,
          }),
        }),
      ),
    );

    const askedAtMs = Date.now();
    const phase = await claimCall(table, asked);
    const answeredAtMs = Date.now();

    expect(phase).toMatchObject({ kind: 'pending', until: { afterMs: expect.any(Number), runsAnew: true } });
    const { afterMs } = (phase as { until: { afterMs: number } }).until;
    // To the first instant it counts as expired: a second past its TTL (review 33, F4).
    expect(afterMs).toBeGreaterThanOrEqual(expiredFromMs(asked.expiresAtS) - answeredAtMs);
    expect(afterMs).toBeLessThanOrEqual(expiredFromMs(asked.expiresAtS) - askedAtMs);
  });

  it('taken over, but not a record as claims write it (no call instance): an error naming the record, not a claim', async () => {
    const recordKey = `claimcall#${randomUUID()}`;
    const now = Date.now();
    await seed(() =>
      world.client.send(
        new PutItemCommand({
          TableName: table.tableName,
          Item: marshall({
            id: recordKey,
            status: 'INPROGRESS',
            claim_id: 'c0',
            attempt: 1,
            in_progress_expiration: now - 1_000,
            expiration: Math.floor(now / 1000) + TTL_SECONDS,
            validation: 'v1',
          }),
        }),
      ),
    );

    const taking = takeOver(
      table,
      { recordKey, fromClaimId: 'c0', validation: 'v1', lockEndsMs: now + 10_000, ttlSeconds: TTL_SECONDS },
      now,
    );

    await expect(taking).rejects.toThrow(`the call record taken over is not one a claim wrote: ${recordKey}`);
  });
});

describe('a resume (the completer finishing the claim it read)', () => {
  it('of an abandoned claim: taken over with one UpdateItem, never a PutItem', async () => {
    const asked = request();
    const held = await abandonedClaim(asked);

    const phase = await claimCall(table, { ...asked, resume: held.claimId });

    expect(phase).toMatchObject({ kind: 'claimed', claim: { attempt: 2, callId: held.callId } });
    expect(attemptSends()).toEqual(['UpdateItemCommand']);
  });

  it('of a record gone meanwhile (released, or expired and swept): nothing to resume, nothing written', async () => {
    const asked = request();
    const held = await abandonedClaim(asked);
    await seed(() =>
      world.client.send(new DeleteItemCommand({ TableName: table.tableName, Key: marshall({ id: asked.recordKey }) })),
    );

    const error = errorOf(await claimCall(table, { ...asked, resume: held.claimId }));

    // Rule 2: the completer never claims afresh — a released or expired call does not come back by itself.
    expect(error).toBeInstanceOf(NotFoundError);
    expect((error as Error).message).toMatch(/nothing to resume/);
    expect(attemptSends()).toEqual(['UpdateItemCommand']);
    expect(await itemOf(asked.recordKey)).toBeUndefined();
  });

  it('of a claim another attempt took over (live): nothing to resume, the record unchanged', async () => {
    const asked = request();
    const held = await abandonedClaim(asked);
    const taken = await seed(() =>
      takeOver(table, { ...asked, fromClaimId: held.claimId, lockEndsMs: Date.now() + 10_000 }, Date.now()),
    );
    expect(taken.kind).toBe('claimed');
    const stored = await itemOf(asked.recordKey);

    const error = errorOf(await claimCall(table, { ...asked, resume: held.claimId }));

    expect(error).toBeInstanceOf(NotFoundError);
    expect((error as Error).message).toMatch(/nothing to resume/);
    expect(await itemOf(asked.recordKey)).toEqual(stored);
  });

  it('of a claim another attempt took over and abandoned in turn: nothing to resume (not its claim)', async () => {
    const asked = request();
    const held = await abandonedClaim(asked);
    await seed(() =>
      takeOver(table, { ...asked, fromClaimId: held.claimId, lockEndsMs: Date.now() - 500 }, Date.now()),
    );

    const error = errorOf(await claimCall(table, { ...asked, resume: held.claimId }));

    expect(error).toBeInstanceOf(NotFoundError);
    expect(await itemOf(asked.recordKey)).toMatchObject({ attempt: 2 });
  });

  it('of a call completed meanwhile: its outcome, replayed', async () => {
    const asked = request();
    const held = await completed(asked);

    const phase = await claimCall(table, { ...asked, resume: held.claimId });

    expect(phase).toMatchObject({ kind: 'outcome', outcome: { receipt: '{"done":true}', replayed: true } });
  });

  it('of a call another attempt took over and completed: its outcome, replayed', async () => {
    const asked = request();
    const held = await abandonedClaim(asked);
    const taken = await seed(() =>
      takeOver(table, { ...asked, fromClaimId: held.claimId, lockEndsMs: Date.now() + 10_000 }, Date.now()),
    );
    if (taken.kind !== 'claimed') throw new Error('the seed takeover was refused');
    await seed(() =>
      store(
        table,
        taken.claim,
        { receipt: '{"done":2}', replayed: false },
        { expiresAtS: asked.expiresAtS, completedAtMs: Date.now() },
      ),
    );

    const phase = await claimCall(table, { ...asked, resume: held.claimId });

    expect(phase).toMatchObject({ kind: 'outcome', outcome: { receipt: '{"done":2}', replayed: true } });
  });

  it('of a call it completed itself, near its TTL: the outcome (the TTL margin is for takeovers only)', async () => {
    const now = Date.now();
    const asked = request({ expiresAtS: Math.ceil(now / 1000) + 20, lockEndsMs: now + 15_000 });
    const held = await completed(asked);

    const phase = await claimCall(table, { ...asked, resume: held.claimId });

    expect(phase).toMatchObject({ kind: 'outcome', outcome: { receipt: '{"done":true}' } });
  });

  it('of its claim parked to a later lock (live), near its TTL: pending until that lock, not the TTL', async () => {
    const now = Date.now();
    const asked = request({ expiresAtS: Math.ceil(now / 1000) + 20, lockEndsMs: now + 15_000 });
    const held = await liveClaim({ ...asked, lockEndsMs: now + 5_000 });

    const phase = await claimCall(table, { ...asked, resume: held.claimId });

    expect(phase).toMatchObject({ kind: 'pending', until: { atMs: now + 5_000 } });
  });

  it('of a claim another attempt took over and abandoned, near its TTL: nothing to resume (not pending)', async () => {
    const now = Date.now();
    const asked = request({ expiresAtS: Math.ceil(now / 1000) + 80, lockEndsMs: now + 15_000 });
    const held = await abandonedClaim(asked);
    await seed(() => takeOver(table, { ...asked, fromClaimId: held.claimId, lockEndsMs: now - 500 }, now));

    const error = errorOf(await claimCall(table, { ...asked, resume: held.claimId }));

    expect(error).toBeInstanceOf(NotFoundError);
  });

  it('with another hash, its lock ending exactly at the last look, 70 s before the TTL (rule 2’s boundary): conflict, not pending', async () => {
    const now = Date.now();
    const expiresAtS = Math.ceil(now / 1000) + 90;
    const asked = request({ expiresAtS, lockEndsMs: (expiresAtS - 70) * 1000 });
    const held = await abandonedClaim(asked);

    const error = errorOf(await claimCall(table, { ...asked, validation: 'v2', resume: held.claimId }));

    expect(error).toBeInstanceOf(ConflictError);
  });

  it('with other arguments’ hash than its record’s (a version whose fingerprint changed): conflict, not taken', async () => {
    const asked = request();
    const held = await abandonedClaim(asked);
    const stored = await itemOf(asked.recordKey);

    const error = errorOf(await claimCall(table, { ...asked, validation: 'v2', resume: held.claimId }));

    expect(error).toBeInstanceOf(ConflictError);
    expect(await itemOf(asked.recordKey)).toEqual(stored);
  });

  it('of a call erased meanwhile: not found (erased), the tombstone unchanged', async () => {
    const asked = request();
    const held = await completed(asked);
    await seed(() => tombstone(table, asked.recordKey));
    const stored = await itemOf(asked.recordKey);

    const error = errorOf(await claimCall(table, { ...asked, resume: held.claimId }));

    expect(error).toBeInstanceOf(NotFoundError);
    expect((error as Error).message).toMatch(/erased/);
    expect(await itemOf(asked.recordKey)).toEqual(stored);
  });

  it('of an abandoned claim too near its TTL for the new lock: pending until the TTL, not taken', async () => {
    const now = Date.now();
    // The lock would end 65 s before the TTL: past the completer's last look, a minute and the clock skew the
    // protocol tolerates (10 s) before it (rule 2; review 32, F1).
    const asked = request({ expiresAtS: Math.ceil(now / 1000) + 80, lockEndsMs: now + 15_000 });
    const held = await abandonedClaim(asked);
    const stored = await itemOf(asked.recordKey);

    const phase = await claimCall(table, { ...asked, resume: held.claimId });

    // Nothing lets it run before the TTL: the whole wait (liveness), not a poll's second.
    expect(phase).toMatchObject({ kind: 'pending', until: { afterMs: expect.any(Number) } });
    const { afterMs } = (phase as { until: { afterMs: number } }).until;
    expect(afterMs).toBeGreaterThan(expiredFromMs(asked.expiresAtS) - Date.now() - 1_000);
    expect(afterMs).toBeLessThanOrEqual(expiredFromMs(asked.expiresAtS) - Date.now() + 1_000);
    expect(await itemOf(asked.recordKey)).toEqual(stored);
    // Far enough from it, the same resume takes it over.
    const later = await claimCall(table, { ...asked, lockEndsMs: now + 5_000, resume: held.claimId });
    expect(later).toMatchObject({ kind: 'claimed', claim: { attempt: 2 } });
  });
});
