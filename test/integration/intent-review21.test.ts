// Rule 3 (docs/state-machine.md): a dedupe window's intent — the windows an erase's marker of no tenant remembers, and which of them it leaves out.
/**
 * Review 21 (helper of h-review21), of 220c51a..c84a858 (erase turns an intent into a marker of no tenant that
 * remembers its own window, ended at the erase plus the clock skew, and every window it remembered whose calls
 * may still be in flight, as a `prior` chain). Each R21 test fails on c84a858's lib/: it states the defect
 * (the correct behaviour), and turns green once it is fixed.
 */
import { eraseItem } from '../../lib/idempotency/protocol/erase';
import { claimIntent } from '../../lib/idempotency/protocol/intent';
import {
  claimerOf,
  goneHolder,
  holderOfClaim,
  intentItemOf,
  liveCall,
  newScope,
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
/** The tool's `ttlSeconds` before a deploy (2 h), and after it (1 h). */
const TTL_BEFORE_S = 7_200;
const TTL_AFTER_S = 3_600;

describe('review 21: the windows an erase’s marker leaves out', () => {
  // `pastWindowsOf` keeps a prior while its end plus `ttlS` has not passed — `ttlS` read off the erased intent
  // (`expiresAtS - windowEndsAtS`), the TTL of the deploy that wrote *that* intent. A call asked in a prior
  // window lives to its own first claim plus the TTL of the deploy that claimed it (its record's TTL).
  it('R21-1 the TTL a prior is pruned by is the erased intent’s, not its calls’: W1 (A, key dk-A) is opened while the tool’s TTL is 2 h; a deploy lowers it to 1 h; F replaces W1 (its intent’s TTL: W2’s end + 1 h) and remembers it — Q, asked in W1 (its record to live to W1 + 2 h), none of whose attempts reached the intent, is still answered there: it runs under dk-A; the tenant’s erase, 1 h 5 min after W1 ended (F settled, F’s intent not yet past its TTL), leaves a marker whose prior W1 is left out (W1’s end + 1 h passed), so Q’s resend is `forgotten`: parked, never run, given up at its last look — where “erase ends a window and forgets none” and Q, whose record is still live, should run under dk-A as it did before the erase', async () => {
    const scope = newScope();
    // 65 min since W1 ended (t0 + 600 s), on a whole second: past W1's end + 1 h, before W1's end + 2 h and
    // before F's intent's TTL (W2's end, t0 + 1300 s, + 1 h).
    const t0 = Math.floor(Date.now() / 1000) * 1000 - 4_500_000;
    const claimAt = claimerOf(world, scope, WINDOW_S);
    const a = goneHolder();
    expect(await claimAt(a, t0, TTL_BEFORE_S)).toEqual({
      kind: 'holds',
      downstreamKey: `dk-${a.claimId}`,
      created: true,
    });
    // After the deploy: F, asked after W1, replaces it (A gone); its intent remembers W1.
    expect(await claimAt(goneHolder(), t0 + 700_000, TTL_AFTER_S)).toMatchObject({ kind: 'holds', created: true });
    // Before the erase, a call asked in W1 (a 2 h record) is answered from W1: it runs under dk-A.
    const q0 = holderOfClaim(await liveCall(world));
    expect(await claimAt(q0, t0 + 100_000, TTL_BEFORE_S)).toEqual({
      kind: 'holds',
      downstreamKey: `dk-${a.claimId}`,
      created: false,
    });

    // The tenant's erase (F settled): a marker of no tenant.
    expect((await eraseItem(world.idempotencyTable, await intentItemOf(world, scope))).outcome).toBe('erased');

    // Q, another call asked in W1 (its record, claimed before the deploy, lives to t0 + 100 s + 2 h), resent.
    const q = holderOfClaim(await liveCall(world));
    expect(await claimAt(q, t0 + 100_000, TTL_BEFORE_S)).toEqual({
      kind: 'holds',
      downstreamKey: `dk-${a.claimId}`,
      created: false,
    });
  });

  // The same deploy, a little later: an intent's TTL is its own window's end plus the TTL of the deploy that
  // wrote it, and so is the TTL of the windows it remembers (`replaced_window`) — though their calls live to
  // their own first claim plus *their* deploy's TTL. Erase deletes an intent past its TTL (as DynamoDB's sweep
  // does, later).
  it('R21-2 an intent replaced by a deploy with a shorter TTL outlives not the window it remembers: W1 (A, key dk-A) opened under a 2 h TTL; after a deploy to 1 h, F replaces it (F’s intent’s TTL: W2’s end + 1 h, 1 h 10 min after W1 ended) — Q, asked in W1 (its record to live to W1 + 2 h), is answered from W1 while the intent stands; the tenant’s erase 1 h 20 min after W1 ended finds F’s intent past its TTL and deletes it, so Q’s resend creates the intent anew under its own key: a second effect for W1’s intent, answered idempotent: false — where the intent (or a marker remembering W1) should be kept while a call asked in W1 may still run, and Q run under dk-A', async () => {
    const scope = newScope();
    // 80 min since W1 ended (t0 + 600 s): past F's intent's TTL (t0 + 1300 s + 1 h), before W1's end + 2 h.
    const t0 = Math.floor(Date.now() / 1000) * 1000 - 5_400_000;
    const claimAt = claimerOf(world, scope, WINDOW_S);
    const a = goneHolder();
    expect(await claimAt(a, t0, TTL_BEFORE_S)).toMatchObject({ kind: 'holds', created: true });
    expect(await claimAt(goneHolder(), t0 + 700_000, TTL_AFTER_S)).toMatchObject({ kind: 'holds', created: true });
    // While the intent stands (DynamoDB's sweep not come), a call asked in W1 is answered from W1.
    const q0 = holderOfClaim(await liveCall(world));
    expect(await claimAt(q0, t0 + 100_000, TTL_BEFORE_S)).toEqual({
      kind: 'holds',
      downstreamKey: `dk-${a.claimId}`,
      created: false,
    });

    expect((await eraseItem(world.idempotencyTable, await intentItemOf(world, scope))).outcome).toBe('erased');

    const q = holderOfClaim(await liveCall(world));
    expect(await claimAt(q, t0 + 100_000, TTL_BEFORE_S)).toEqual({
      kind: 'holds',
      downstreamKey: `dk-${a.claimId}`,
      created: false,
    });
  });
});

describe('a past window’s call whose own claim is lost (mutation: fixPastWindowKey’s claim_lost)', () => {
  it('asked in a window an intent replaced, none of its outcome stored: its key is fixed on the call’s record on its claim — the claim gone (taken over, erased), the attempt ends (`claim_lost`), running nothing and writing nothing', async () => {
    const scope = newScope();
    const t0 = Math.floor((Date.now() - 2 * 3_600_000) / 1000) * 1000;
    expect(await claimIntent(world.idempotencyTable, requestOf(scope, goneHolder(), 60, t0))).toMatchObject({
      kind: 'holds',
    });
    // F, after A's window, replaces it (A's record gone: settled): the intent remembers A's window.
    expect(await claimIntent(world.idempotencyTable, requestOf(scope, goneHolder(), 60, t0 + 100_000))).toMatchObject({
      kind: 'holds',
      created: true,
    });
    const before = await intentItemOf(world, scope);

    // Q, asked in A's window, whose record is gone: A's outcome is not stored, and Q's claim cannot take the key.
    const q = await claimIntent(world.idempotencyTable, requestOf(scope, goneHolder(), 60, t0 + 30_000));

    expect({ q, intent: await intentItemOf(world, scope) }).toEqual({ q: { kind: 'claim_lost' }, intent: before });
  });
});
