// Rule 3 (docs/state-machine.md): a dedupe window's intent living 7 days past its window — what a create over a marker that remembers a window costs, what the docs say of its TTL, and a call of the window resent after a deploy that drops the window.
/**
 * Review 23 (helper of h-review23), of 2f76d3d (review 22's fixes: an intent lives MAX_WINDOWED_TTL_SECONDS past
 * its window; a create passes a marker that remembers no window whatever its TTL; erase's delete is conditioned
 * on what made the item deletable). Each R23 test failed on 2f76d3d: R23-2 and R23-3 (the docs) pass since
 * they were mended; R23-1 (one more write, never a wrong answer) and R23-4 (a deploy that drops a window) are
 * known and left, each a `test.failing` that starts failing once it is fixed (docs/state-machine.md,
 * "Dedupe-window intent" and "Across a deploy").
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { MAX_WINDOWED_TTL_SECONDS } from '../../lib/idempotency/call-state';
import { eraseItem } from '../../lib/idempotency/protocol/erase';
import { claimIntent, intentKeyOf } from '../../lib/idempotency/protocol/intent';
import { releaseIntent } from '../../lib/idempotency/protocol/intent-writes';
import type { ToolRuntime } from '../../lib/idempotency/runtime';
import { defineTool } from '../../lib/idempotency/tool';
import { intentWritesOn } from '../helpers/no-effect';
import {
  goneHolder,
  intentItemOf,
  newScope,
  receiptOf,
  requestOf,
  sameArgs,
  windowWithAStraggler,
} from '../helpers/past-window';
import { createProtocolWorld, deadline, type ProtocolWorld } from '../helpers/protocol-world';

let world: ProtocolWorld;
let runtime: ToolRuntime;
beforeAll(() => {
  world = createProtocolWorld();
  runtime = world.idempotencyRuntime();
});
afterAll(() => world.destroy());
afterEach(() => jest.restoreAllMocks());

const WINDOW_S = 600;

/**
 * W1 (A, asked at t0) replaced by D (asked at `dAskedMs`, after W1's end), whose first run's business error
 * releases it: a marker remembering W1, its TTL D's intent's — D's window's end plus 7 days.
 */
async function markerRememberingW1(scope: ReturnType<typeof newScope>, t0: number, dAskedMs: number) {
  const a = goneHolder();
  expect(await claimIntent(world.idempotencyTable, requestOf(scope, a, WINDOW_S, t0))).toMatchObject({
    kind: 'holds',
    created: true,
  });
  const d = goneHolder();
  expect(await claimIntent(world.idempotencyTable, requestOf(scope, d, WINDOW_S, dAskedMs))).toMatchObject({
    kind: 'holds',
    downstreamKey: `dk-${d.claimId}`,
    created: true,
  });
  expect(await releaseIntent(world.idempotencyTable, intentKeyOf(scope), d)).toBe('released');
  const marker = await intentItemOf(world, scope);
  expect(marker.intent_owner).toBeUndefined();
  expect(marker.replaced_window).toMatchObject({ end: t0 / 1000 + WINDOW_S, key: `dk-${a.claimId}` });
  expect(marker.expiration).toBe(dAskedMs / 1000 + WINDOW_S + MAX_WINDOWED_TTL_SECONDS);
  return marker;
}

describe('review 23: a create over a marker that remembers a window (R21-2’s refusal after R22-1)', () => {
  // Since R22-1 every intent — and so every marker this version leaves — lives 7 days past its own window, and
  // defineTool caps a windowed tool's TTL at 7 days: a marker remembering W1 lives at least W1's end + 7 days,
  // and any create over it (its creator asked after W1's end) lives at least its asked time + window + 7 days —
  // later than the last call asked in W1 can live. The marker has nothing the new intent must outlive. Yet
  // createIntent still refuses whenever `#expiry > :expiry` on a marker that remembers a window, and
  // claimOutliving creates a second time: two billed writes for a first call. The docs say this can only be "a
  // marker an earlier version wrote under a TTL over 7 days" (state-machine.md, Dedupe-window intent).
  it.failing('R23-1 (known, not fixed: docs/state-machine.md, Dedupe-window intent, “Known cost”) a first call’s create over a release marker remembering a window costs two intent writes where one does: W1 (A, t0) replaced by D (asked t0 + 700 s) whose first run’s business error released it — a marker remembering W1, TTL t0 + 1300 s + 7 d; E, asked at t0 + 695 s (after W1’s end; its create later than D’s, or its worker’s clock 5 s behind D’s — rule 2 tolerates 10 s), same tool, no deploy: its create is refused for the marker’s later TTL and made again by claimOutliving — it should be one write (W1’s calls, asked by t0 + 600 s under a TTL of at most 7 d, are dead before E’s intent expires at t0 + 1295 s + 7 d)', async () => {
    const scope = newScope();
    const t0 = Math.floor(Date.now() / 1000) * 1000 - 3_600_000;
    await markerRememberingW1(scope, t0, t0 + 700_000);

    const e = goneHolder();
    const counted = intentWritesOn(world);
    const claimed = await claimIntent(world.idempotencyTable, requestOf(scope, e, WINDOW_S, t0 + 695_000));
    counted.stop();
    expect(claimed).toEqual({ kind: 'holds', downstreamKey: `dk-${e.claimId}`, created: true });
    expect(counted.writes).toEqual(['UpdateItemCommand']);
  });

  it.failing('R23-1b (known, not fixed) the same in order, after a deploy that shortened the window (600 s to 60 s): D (asked t0 + 700 s, window 600 s) replaced W1 and released it; E, asked at t0 + 710 s after D’s release, under the 60 s window — its intent living t0 + 770 s + 7 d, W1’s calls dead by t0 + 600 s + 7 d — pays a refused create and a second one', async () => {
    const scope = newScope();
    const t0 = Math.floor(Date.now() / 1000) * 1000 - 3_600_000;
    await markerRememberingW1(scope, t0, t0 + 700_000);

    const e = goneHolder();
    const counted = intentWritesOn(world);
    const claimed = await claimIntent(world.idempotencyTable, requestOf(scope, e, 60, t0 + 710_000));
    counted.stop();
    expect(claimed).toEqual({ kind: 'holds', downstreamKey: `dk-${e.claimId}`, created: true });
    expect(counted.writes).toEqual(['UpdateItemCommand']);
  });
});

describe('review 23: the docs against the intent’s TTL since R22-1', () => {
  const GUARANTEES = readFileSync(join(__dirname, '..', '..', 'docs', 'guarantees.md'), 'utf8');
  const STATE_MACHINE = readFileSync(join(__dirname, '..', '..', 'docs', 'state-machine.md'), 'utf8');

  it('R23-2 docs/guarantees.md (Dedupe window) still gives an intent item’s TTL as “the window’s end plus the records’ TTL”: an intent created under a 1 h TTL lives to its window’s end plus 7 days (MAX_WINDOWED_TTL_SECONDS, R22-1), as docs/state-machine.md now says', async () => {
    const scope = newScope();
    const t0 = Math.floor(Date.now() / 1000) * 1000 - 60_000;
    expect(await claimIntent(world.idempotencyTable, requestOf(scope, goneHolder(), WINDOW_S, t0))).toMatchObject({
      created: true,
    });
    const item = await intentItemOf(world, scope);
    const livesPastWindowS = (item.expiration as number) - (item.window_end as number);
    const stated = /\(`<tool>#intent#[^`]*`, TTL = ([^,]+),/.exec(GUARANTEES)?.[1];
    expect({ livesPastWindowS, stated }).toEqual({
      livesPastWindowS: MAX_WINDOWED_TTL_SECONDS,
      stated: expect.stringContaining('7 days'),
    });
  });

  it('R23-3 docs/state-machine.md rule 3 says an erase’s marker keeps, as priors, only the windows “whose calls may still be in flight (its end plus the records’ TTL not passed…)”: an erase 3 h after W1 ended (records’ TTL 1 h) keeps W1 as the prior all the same — none is left out for its age since R21-1, and since R22-1 a call of W1 may live 7 days past it', async () => {
    const scope = newScope();
    const t0 = Math.floor(Date.now() / 1000) * 1000 - 3 * 3_600_000;
    const a = goneHolder();
    expect(await claimIntent(world.idempotencyTable, requestOf(scope, a, WINDOW_S, t0))).toMatchObject({
      created: true,
    });
    const d = goneHolder();
    expect(await claimIntent(world.idempotencyTable, requestOf(scope, d, WINDOW_S, t0 + 700_000))).toMatchObject({
      created: true,
    });
    expect((await eraseItem(world.idempotencyTable, await intentItemOf(world, scope))).outcome).toBe('erased');
    const kept = ((await intentItemOf(world, scope)).replaced_window as { prior?: { key?: string } }).prior?.key;
    const pruneByAge = STATE_MACHINE.includes("(its end plus the records' TTL not passed");
    expect({ kept, pruneByAge }).toEqual({ kept: `dk-${a.claimId}`, pruneByAge: false });
  });
});

describe('review 23: a deploy that drops the window to raise the TTL past 7 days (the way R22-1’s cap leaves)', () => {
  // defineTool now refuses ttlSeconds over 7 days on a tool with a dedupe window; a tool that needs a longer TTL
  // must drop its window. A call asked in a window under the windowed definition, none of whose attempts ran
  // (it met the holder, or never reached the intent), is resent after that deploy: `chooseDownstreamKey` sees no
  // window and runs it under its own key — beside the window holder's effect. Rule 3: “A call's window is the one
  // it was asked in (its first claim's time), however late an attempt runs it”; guarantees: two fresh keys inside
  // the window “cause one effect (the loser is pending, its retry the replay)”.
  it.failing('R23-4 (known, not fixed: docs/state-machine.md, Across a deploy — a deploy that drops a tool’s window) a call asked inside a window (Q, a fresh key, its first attempt failed before it reached the intent) resent after a deploy that dropped the tool’s window and raised its TTL to 30 days runs under its own key: a second effect beside A’s, where Q should be answered A’s receipt (its window’s effect) as it is without the deploy', async () => {
    const { t, receipt } = await windowWithAStraggler(world, runtime, 'r23');
    const { dedupeWindowSeconds: _dropped, ...rest } = t.tool;
    const deployed = defineTool({ ...rest, ttlSeconds: 30 * 24 * 3_600 });
    const q = await runtime.invoke(deployed, t.caller, sameArgs('q'), deadline());
    expect({ effects: t.effects.size, q: receiptOf(q) }).toEqual({ effects: 1, q: receipt });
  });

  it('R23-4 (control) the same resend with the window kept: answered A’s receipt, one effect', async () => {
    const { t, receipt } = await windowWithAStraggler(world, runtime, 'r23');
    const q = await t.call('q');
    expect({ effects: t.effects.size, q: receiptOf(q) }).toEqual({ effects: 1, q: receipt });
  });
});
