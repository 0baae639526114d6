// Rule 3 (docs/state-machine.md): a dedupe window's intent — what an erase leaves of it (a marker of no tenant), and the windows that marker remembers.
/**
 * Review 20 (helper of h-review20), of 220c51a..a390e47 (R19's fixes: erase turns an intent into a marker of
 * no tenant that remembers its own window, ended at the erase, and the one it replaced as its prior; an erased
 * holder met by a claimant is ended the same way, and the claimant claims again). Each R20 test fails on
 * a390e47's lib/: it states the defect (the correct behaviour), and turns green once it is fixed.
 */
import { eraseItem } from '../../lib/idempotency/protocol/erase';
import { claimIntent } from '../../lib/idempotency/protocol/intent';
import {
  intentOf,
  markerOf,
  type PastWindow,
  pastWindowItem,
  pastWindowsOf,
} from '../../lib/idempotency/protocol/intent-record';
import { eraseIntentItem } from '../../lib/idempotency/protocol/intent-writes';
import { DEFAULT_RECORD_ATTRIBUTES } from '../../lib/idempotency/protocol/record';
import type { ToolRuntime } from '../../lib/idempotency/runtime';
import { callRecords } from '../helpers/call-records';
import { movableClock } from '../helpers/clock';
import { recordIdsOf, throttleNextIntentWrite } from '../helpers/no-effect';
import {
  goneHolder,
  holderOfClaim,
  intentItemOf,
  keyedWindowTool,
  liveCall,
  newScope,
  receiptOf,
  requestOf,
  windowWithAStraggler,
} from '../helpers/past-window';
import { createProtocolWorld, type ProtocolWorld } from '../helpers/protocol-world';

let world: ProtocolWorld;
let runtime: ToolRuntime;
beforeAll(() => {
  world = createProtocolWorld();
  runtime = world.idempotencyRuntime();
});
const itemOf = (recordKey: string) => callRecords(world, runtime).itemOf(recordKey);
afterAll(() => world.destroy());
afterEach(() => jest.restoreAllMocks());

const WINDOW_S = 600;

describe('review 20: the windows an erase’s marker remembers', () => {
  it('R20-1 erase forgets a window after all: A’s window W1 (A’s effect, key dk-A) is replaced by F’s W2; the tenant’s erase ends W2 (marker: W2, prior W1); G, asked after, creates over it (G’s intent keeps W2 with its prior W1 — a call asked in W1 is still answered: it runs under dk-A); a second erase of the tenant turns G’s intent into a marker whose prior is W2 *without* W1 (“a prior has no prior”) — Q, asked in W1 and none of whose attempts reached the intent, is then `forgotten`: parked, never run, given up (stalled) at its last look, where rule 3 says “erase ends a window; it never forgets one” and it should run under W1’s key', async () => {
    const scope = newScope();
    // Half an hour ago, on a whole second: every window below has ended by now, none of the intents' TTLs.
    const t0 = Math.floor(Date.now() / 1000) * 1000 - 1_800_000;
    const a = goneHolder();
    const claimAt = (holder: ReturnType<typeof goneHolder>, atMs: number) =>
      claimIntent(world.idempotencyTable, requestOf(scope, holder, WINDOW_S, atMs));
    const eraseTheIntent = async () =>
      (await eraseItem(world.idempotencyTable, await intentItemOf(world, scope))).outcome;

    expect(await claimAt(a, t0)).toEqual({ kind: 'holds', downstreamKey: `dk-${a.claimId}`, created: true });
    // F, after W1: replaces it (A gone), its window W2 ends at t0 + 1300 s.
    expect(await claimAt(goneHolder(), t0 + 700_000)).toMatchObject({ kind: 'holds', created: true });
    // The tenant's first erase (F settled): a marker of no tenant remembering W2 and, as its prior, W1.
    expect(await eraseTheIntent()).toBe('erased');
    expect((await intentItemOf(world, scope)).replaced_window).toMatchObject({ prior: { key: `dk-${a.claimId}` } });
    // G, asked after W2, creates over the marker: its intent keeps W2 and its prior W1.
    expect(await claimAt(goneHolder(), t0 + 1_400_000)).toMatchObject({ kind: 'holds', created: true });
    // A call asked in W1 is still answered here: it runs under W1's key.
    const early = holderOfClaim(await liveCall(world));
    expect(await claimAt(early, t0 + 100_000)).toEqual({
      kind: 'holds',
      downstreamKey: `dk-${a.claimId}`,
      created: false,
    });

    // The tenant's second erase (G settled): G's window, its prior W2 — and W1 no more.
    expect(await eraseTheIntent()).toBe('erased');
    const q = holderOfClaim(await liveCall(world));
    expect(await claimAt(q, t0 + 100_000)).toEqual({ kind: 'holds', downstreamKey: `dk-${a.claimId}`, created: false });
  });

  it('R20-2 the ceil(now) boundary: an erase at S.2 s ends A’s window at S+1; R1, asked at S.5 (after the erase), is taken for a call of the erased window and runs under A’s key — created by no call, one of no intent’s runners, seen by no later call — while R2, asked at S+1.1, creates a fresh intent under its own key and runs beside it: two calls asked after the erase, 0.6 s apart, run under two keys (with A’s effect erased from the app’s tables, two effects; without, R1, asked after the erase, is answered the erased effect), where rule 3 says “a call asked after the erase creates the intent anew over the marker” — the two run under one key (R1 creates the intent and R2 waits on it, or both are the window’s)', async () => {
    const scope = newScope();
    const s = Math.floor(Date.now() / 1000) - 30;
    const a = goneHolder();
    expect(await claimIntent(world.idempotencyTable, requestOf(scope, a, WINDOW_S, (s - 60) * 1000))).toMatchObject({
      kind: 'holds',
      created: true,
    });
    const held = intentOf(await intentItemOf(world, scope), world.idempotencyTable.attributes);
    if (!held) throw new Error('no intent');
    // The tenant's erase reaches the intent at s.2 (A settled): A's window ends "at the erase".
    expect(await eraseIntentItem(world.idempotencyTable, held, s * 1000 + 200)).toBe('erased');

    const r1 = holderOfClaim(await liveCall(world));
    const r2 = holderOfClaim(await liveCall(world));
    const first = await claimIntent(world.idempotencyTable, requestOf(scope, r1, WINDOW_S, s * 1000 + 500));
    const second = await claimIntent(world.idempotencyTable, requestOf(scope, r2, WINDOW_S, (s + 1) * 1000 + 100));
    const runUnder = [first, second].flatMap((claim) => (claim.kind === 'holds' ? [claim.downstreamKey] : []));
    expect({ first, second, keys: new Set(runUnder).size }).toEqual({ first, second, keys: 1 });
  });

  // Rule 2: "the clock skew between workers the protocol tolerates" is 10 s. The window an erase ends is ended at
  // ceil(now) on the ending worker's clock, and compared with the call's `askedAtMs` — its first claim's time, on
  // the clock of the worker that made that claim.
  it('R20-3 clock skew (3 s, inside the 10 s rule 2 tolerates), the R19-4 path: Q, asked in A’s window on a worker 3 s ahead, fails before the intent; the tenant’s erase tombstones A (Q kept); Q2, a call of the window on a worker on true time, meets A’s intent with its holder erased and ends the window at ceil(its now) — before Q’s asked time on the first worker’s clock — and runs under A’s key (a replay); Q’s resend, once its lock has ended, finds the window ended before it was asked, creates the intent anew over the marker and runs under its own key: a second effect for A’s window, answered idempotent: false, where Q is that window’s call and runs under A’s key', async () => {
    const clock = movableClock();
    const t = keyedWindowTool(world, runtime, 'r20');
    const a = await t.call('a');
    expect(a).toEqual(expect.objectContaining({ ok: true, idempotent: false }));
    const [aKey] = await recordIdsOf(world, t.caller.tenant);
    // Q's first attempt, on a worker 3 s ahead: its create of the intent throttled, it never reaches it.
    clock.advance(3_000);
    throttleNextIntentWrite(world, 'create');
    expect(await t.call('q')).toMatchObject({ ok: false });
    clock.advance(-3_000);
    const qKey = (await recordIdsOf(world, t.caller.tenant)).find((id) => id !== aKey) ?? '';

    expect((await eraseItem(world.idempotencyTable, await itemOf(qKey))).outcome).toBe('in_flight');
    expect((await eraseItem(world.idempotencyTable, await itemOf(aKey ?? ''))).outcome).toBe('erased');
    // Q2 (true time): A erased, no runner in flight — the window ends at ceil(now), Q2 runs under A's key.
    expect(await t.call('q2')).toEqual(expect.objectContaining({ ok: true, idempotent: true, receipt: receiptOf(a) }));

    // Q's resend, once the lock its first attempt left (on its own clock) has ended.
    clock.advance(3_100);
    const q = await t.call('q');
    expect({ effects: t.effects.size, q }).toEqual({
      effects: 1,
      q: expect.objectContaining({ ok: true, idempotent: true, receipt: receiptOf(a) }),
    });
  });

  it('R20-4 clock skew, the erase’s own write: Q, asked in A’s window (true time), fails before the intent; the tenant’s erase runs on a worker 3 s behind — Q kept, A tombstoned, the intent turned into a marker whose window ends at ceil(its now), before Q was asked — Q’s resend (true time) finds the window ended before it was asked, creates the intent anew over the marker and runs under its own key: a second effect for A’s window (R19-1/R19-2 again, by 3 s of skew)', async () => {
    const { clock, t, aKey, qKey, intentKey, receipt } = await windowWithAStraggler(world, runtime, 'r20');
    clock.advance(-3_000);
    expect((await eraseItem(world.idempotencyTable, await itemOf(qKey))).outcome).toBe('in_flight');
    expect((await eraseItem(world.idempotencyTable, await itemOf(aKey))).outcome).toBe('erased');
    expect((await eraseItem(world.idempotencyTable, await itemOf(intentKey))).outcome).toBe('erased');
    clock.advance(3_000);

    const q = await t.call('q');
    expect({ effects: t.effects.size, q }).toEqual({
      effects: 1,
      q: expect.objectContaining({ ok: true, idempotent: true, receipt }),
    });
  });
});

describe('pastWindowsOf: the windows an erase’s marker keeps', () => {
  const window = (endsAtS: number, prior?: PastWindow): PastWindow => ({
    endsAtS,
    callId: `c${endsAtS}`,
    downstreamKey: `k${endsAtS}`,
    previousEndsAtS: prior?.endsAtS,
    ...(prior ? { prior } : {}),
  });

  it('keeps every prior whatever its age — its calls may have been asked under a longer TTL than the intent’s (review 21, R21-1: pruned by the intent’s TTL, a live call’s window was forgotten)', () => {
    const chain = window(5_000, window(4_000, window(3_000, window(1_000))));
    expect(pastWindowsOf(chain)).toEqual(chain);
    expect(pastWindowsOf(window(10))).toEqual(window(10));
  });

  it('a past window lacking its end, its call or its key is no window (nor is such a prior): a marker remembering none', () => {
    const full = { end: 10, call: 'c10', key: 'k10' };
    const read = (replaced_window: unknown) =>
      markerOf({ id: 'note#intent#x', expiration: 99, replaced_window }, DEFAULT_RECORD_ATTRIBUTES)?.replaced;
    const partial = [
      { call: 'c10', key: 'k10' },
      { end: 10, key: 'k10' },
      { end: 10, call: 'c10' },
    ];
    expect(partial.map(read)).toEqual([undefined, undefined, undefined]);
    expect(partial.map((prior) => read({ ...full, before: 5, prior })?.prior)).toEqual([
      undefined,
      undefined,
      undefined,
    ]);
    expect(read({ ...full, before: 5, prior: { end: 5, call: 'c5', key: 'k5' } })).toEqual({
      endsAtS: 10,
      callId: 'c10',
      downstreamKey: 'k10',
      previousEndsAtS: 5,
      prior: { endsAtS: 5, callId: 'c5', downstreamKey: 'k5', previousEndsAtS: undefined },
    });
  });

  it('a marker’s chain is read as written (`pastWindowItem` ↔ `markerOf`), 24 priors deep at most', () => {
    let chain = window(0);
    for (let end = 1; end <= 30; end += 1) chain = window(end, chain);
    const item = { id: 'note#intent#x', expiration: 99, replaced_window: pastWindowItem(chain) };
    const read = markerOf(item, DEFAULT_RECORD_ATTRIBUTES)?.replaced;
    let depth = 0;
    for (let at = read?.prior; at; at = at.prior) depth += 1;
    expect({ depth, head: read && { ...read, prior: undefined } }).toEqual({
      depth: 24,
      head: { ...window(30), previousEndsAtS: 29, prior: undefined },
    });
    expect(read?.prior?.prior).toMatchObject({ endsAtS: 28, callId: 'c28', downstreamKey: 'k28', previousEndsAtS: 27 });
  });

  it('keeps a chain of 24 priors at most (an erase and a create over its marker, 25 times within a TTL: the oldest forgotten)', () => {
    let chain = window(0);
    for (let end = 1; end <= 30; end += 1) chain = window(end, chain);
    let depth = 0;
    for (let at: PastWindow | undefined = pastWindowsOf(chain).prior; at; at = at.prior) depth += 1;
    expect(depth).toBe(24);
  });
});
