// Rule 3 (docs/state-machine.md): a dedupe window's intent — how long it lives against the calls of its own window, and what a create over a marker costs.
/**
 * Review 22 (helper of h-review22), of a9a3a70, 742d0ef and 6ba1f04 (review 21's fixes: a replace keeps the
 * longer TTL, a create over a marker that outlives it is refused and made again to live as long — the private
 * `claimOutliving` —, an erase's marker keeps every prior, 24 at most). Each R22 test fails on 6ba1f04's lib/:
 * it states the defect (the correct behaviour), and turns green once it is fixed.
 */
import { ConditionalCheckFailedException, DeleteItemCommand } from '@aws-sdk/client-dynamodb';
import { marshall } from '@aws-sdk/util-dynamodb';
import { MAX_WINDOWED_TTL_SECONDS } from '../../lib/idempotency/call-state';
import { eraseItem } from '../../lib/idempotency/protocol/erase';
import { claimIntent, intentKeyOf } from '../../lib/idempotency/protocol/intent';
import { beforeNext } from '../helpers/intercept';
import { intentWritesOn } from '../helpers/no-effect';
import {
  claimerOf,
  goneHolder,
  holderOfClaim,
  intentItemOf,
  liveCall,
  newScope,
  releasedBy,
  requestOf,
} from '../helpers/past-window';
import { createProtocolWorld, type ProtocolWorld } from '../helpers/protocol-world';

let world: ProtocolWorld;
beforeAll(() => {
  world = createProtocolWorld();
});
afterAll(() => world.destroy());
afterEach(() => jest.restoreAllMocks());

const WINDOW_S = 600;
/** The tool's `ttlSeconds` before a deploy (1 h), and after it (2 h): this time the deploy *raises* it. */
const TTL_BEFORE_S = 3_600;
const TTL_AFTER_S = 7_200;

describe('review 22: an intent’s TTL against the calls of its own window', () => {
  // Review 21 made an intent (or marker) live as long as the longest-lived *past* window it remembers (a replace
  // keeps the longer TTL; a create over an outliving marker is made again to live as long). Its *own* window's
  // TTL is still its creator's: `askedAtS + windowSeconds + ttlSeconds` of the one call that created it. A call
  // asked in that window after a deploy raised the tool's TTL lives to its first claim plus the *new* TTL — past
  // the intent — and none of its attempts ever writes the intent (it met a holder, or never reached it), so
  // nothing lengthens the intent for it.
  it('R22-1 an intent whose own window is asked in under a longer TTL (a deploy raised it from 1 h to 2 h) expires before that call: W1 (A, key dk-A) opened under 1 h; Q, asked in W1 after the deploy (its record to live to W1 + 2 h), none of whose attempts reached the intent, is answered from W1 while the intent stands (it runs under dk-A); DynamoDB’s sweep deletes the intent past its TTL (W1’s end + 1 h), and Q’s resend creates the intent anew under its own key — a second effect for W1, where the intent should live as long as a call asked in its window (rule 3: “DynamoDB never deletes an intent that a call asked inside its window may still need”) and Q run under dk-A', async () => {
    const scope = newScope();
    // 75 min since W1 ended (t0 + 600 s): past the intent's TTL (W1's end + 1 h), before Q's record's (t0 + 100 s + 2 h).
    const t0 = Math.floor(Date.now() / 1000) * 1000 - 5_100_000;
    const claimAt = claimerOf(world, scope, WINDOW_S);
    const a = goneHolder();
    expect(await claimAt(a, t0, TTL_BEFORE_S)).toEqual({
      kind: 'holds',
      downstreamKey: `dk-${a.claimId}`,
      created: true,
    });
    // The intent lives past W1 the longest TTL a windowed tool may have, not its creator's (the fix): a call
    // asked in W1 under any TTL a deploy gives the tool expires first.
    const intent = await intentItemOf(world, scope);
    expect(intent.expiration).toBe(t0 / 1000 + WINDOW_S + MAX_WINDOWED_TTL_SECONDS);
    expect(MAX_WINDOWED_TTL_SECONDS).toBeGreaterThanOrEqual(TTL_AFTER_S);

    // DynamoDB's TTL sweep deletes only what is past its `expiration`: on the last second of Q's record, the
    // intent is not.
    const qRecordExpiresAtS = (t0 + 100_000) / 1000 + TTL_AFTER_S;
    await expect(
      world.client.send(
        new DeleteItemCommand({
          TableName: world.idempotencyTable.tableName,
          Key: marshall({ id: intentKeyOf(scope) }),
          ConditionExpression: 'expiration < :now',
          ExpressionAttributeValues: marshall({ ':now': qRecordExpiresAtS }),
        }),
      ),
    ).rejects.toThrow(ConditionalCheckFailedException);

    // Q, asked in W1 (t0 + 100 s) after the deploy: its record lives to t0 + 100 s + 2 h — still live now.
    const q = holderOfClaim(await liveCall(world));
    expect(await claimAt(q, t0 + 100_000, TTL_AFTER_S)).toEqual({
      kind: 'holds',
      downstreamKey: `dk-${a.claimId}`,
      created: false,
    });
  });

  it('R22-1b the same through the library’s own erase, not the sweep: W1 (A, dk-A) opened under a 1 h TTL, Q asked in W1 after a deploy raised it to 2 h; the tenant’s erase 75 min after W1 ended finds the intent past its TTL and deletes it (`eraseIntentItem`: “past its TTL, deleted”) instead of leaving a marker remembering W1 — Q’s resend creates the intent anew under its own key, where it should run under dk-A', async () => {
    const scope = newScope();
    const t0 = Math.floor(Date.now() / 1000) * 1000 - 5_100_000;
    const claimAt = claimerOf(world, scope, WINDOW_S);
    const a = goneHolder();
    expect(await claimAt(a, t0, TTL_BEFORE_S)).toMatchObject({ kind: 'holds', created: true });

    expect((await eraseItem(world.idempotencyTable, await intentItemOf(world, scope))).outcome).toBe('erased');

    const q = holderOfClaim(await liveCall(world));
    expect(await claimAt(q, t0 + 100_000, TTL_AFTER_S)).toEqual({
      kind: 'holds',
      downstreamKey: `dk-${a.claimId}`,
      created: false,
    });
  });
});

describe('review 22: what a create over a marker costs (R21-2’s extra write)', () => {
  // R21-2's condition refuses a create over any marker whose TTL is later than the new intent's — "a window it
  // remembers may have been asked under a longer TTL". A release's marker that remembers no window (its intent
  // replaced none) has nothing to outlive, yet refuses too whenever its creator's first claim fell in a later
  // second than the new creator's: two calls of the same arguments asked out of order with their creates (or
  // on workers whose clocks differ by a second or two — rule 2 tolerates 10 s). The new creator pays a refused
  // create (billed) and a second one: "one more write, only then" (a TTL lowered by a deploy) holds not.
  it('R22-2 a first call’s create over a release marker that remembers no window costs two intent writes (a create refused by the marker’s later TTL, then claimOutliving’s) where one does: D, asked at t0 + 5 s, creates the intent, its first run’s business error releases it (a marker, no replaced_window, TTL t0 + 5 s + window + TTL); E, asked at t0 (its create later than D’s, or its worker’s clock 5 s behind D’s), same TTL, no deploy between — its claim of the intent should be one write', async () => {
    const scope = newScope();
    const t0 = Math.floor(Date.now() / 1000) * 1000 - 60_000;
    await releasedBy(world, scope, WINDOW_S, t0 + 5_000);
    const marker = await intentItemOf(world, scope);
    expect(marker.replaced_window).toBeUndefined(); // it remembers no window

    const e = goneHolder();
    const counted = intentWritesOn(world);
    const claimed = await claimIntent(world.idempotencyTable, requestOf(scope, e, WINDOW_S, t0));
    counted.stop();
    expect(claimed).toEqual({ kind: 'holds', downstreamKey: `dk-${e.claimId}`, created: true });
    expect(counted.writes).toEqual(['UpdateItemCommand']);
  });
});

describe('review 22: erase’s delete of a marker it read as remembering no window', () => {
  // `eraseIntentItem` deletes a marker that remembers no window (or an item past its TTL) with a DeleteItem
  // conditioned on `attribute_not_exists(#holder)` alone (`heldOrNone`). A create over the marker between the
  // read and the delete is caught (a holder: refused, read again — erase.test). But a create *and then* an erase
  // of that new intent (a second erase run, or a claimant that found its holder erased: `takeFromAnother`)
  // leaves a holder-less marker of no tenant that remembers the new window — and the first erase's stale delete
  // passes on it: the window, with its effect, is forgotten.
  it('R22-3 an erase that read a marker remembering no window deletes, after a create over it and a second erase, the marker of no tenant that now remembers the created window W2 (its holder X, key dk-X): Q, asked in W2 (none of its attempts reached the intent), then creates the intent anew under its own key — a second effect beside X’s, where the stale delete should be refused (the marker changed since it was read) and Q run under dk-X', async () => {
    const scope = newScope();
    const t0 = Math.floor(Date.now() / 1000) * 1000 - 30_000;
    // D created the intent (replacing no window) and released it: a marker remembering no window.
    await releasedBy(world, scope, WINDOW_S, t0);
    const read = await intentItemOf(world, scope);
    expect(read.replaced_window).toBeUndefined();

    const x = goneHolder();
    beforeNext(
      world.client,
      'DeleteItemCommand',
      async () => {
        // Between the erase's read and its delete: X (asked at t0 + 10 s) creates the intent over the marker
        // and makes its effect under dk-X; X settled (gone), the intent is erased (a second run, or the claimant's
        // erase path): a marker of no tenant remembering W2.
        expect(await claimIntent(world.idempotencyTable, requestOf(scope, x, WINDOW_S, t0 + 10_000))).toEqual({
          kind: 'holds',
          downstreamKey: `dk-${x.claimId}`,
          created: true,
        });
        expect((await eraseItem(world.idempotencyTable, await intentItemOf(world, scope))).outcome).toBe('erased');
        expect((await intentItemOf(world, scope)).replaced_window).toMatchObject({ key: `dk-${x.claimId}` });
      },
      (input) => JSON.stringify(input.Key).includes('#intent#'),
    );
    await eraseItem(world.idempotencyTable, read);

    // Q, asked in W2 (t0 + 15 s, before its end at the erase + 10 s), none of whose attempts reached the intent.
    const q = holderOfClaim(await liveCall(world));
    expect({
      left: (await intentItemOf(world, scope)).replaced_window,
      q: await claimIntent(world.idempotencyTable, requestOf(scope, q, WINDOW_S, t0 + 15_000)),
    }).toEqual({
      left: expect.objectContaining({ key: `dk-${x.claimId}` }),
      q: { kind: 'holds', downstreamKey: `dk-${x.claimId}`, created: false },
    });
  });
});
