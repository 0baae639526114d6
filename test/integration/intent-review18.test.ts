// Rule 3 (docs/state-machine.md): a dedupe window's intent — a window it replaced, its markers, and what they cost.
/**
 * Review 18 (helper of h-review18), of 6d7ceab..ed70adb (R17's fixes: `replaced_window` with `before`,
 * markers, `fixPastWindowKey`, `intent_freed`, `callOf`, attach's parked duplicates). Each R18 test fails on
 * ed70adb's lib/: it states the defect (the correct behaviour), and turns green once it is fixed.
 */
import { randomUUID } from 'node:crypto';
import { lastLookMs } from '../../lib/idempotency/backoff';
import { eraseItem } from '../../lib/idempotency/protocol/erase';
import { claimIntent, type IntentRequest, intentKeyOf } from '../../lib/idempotency/protocol/intent';
import { releaseIntent } from '../../lib/idempotency/protocol/intent-writes';
import type { ToolRuntime } from '../../lib/idempotency/runtime';
import { callRecords } from '../helpers/call-records';
import { beforeNext, throttled } from '../helpers/intercept';
import { intentIdsOf as intentIdsInWorld, isIntentWrite, isIntentWriteOf } from '../helpers/no-effect';
import {
  goneHolder,
  intentItemOf,
  newScope,
  PAST_THE_WINDOW_MS,
  requestOf,
  twoHoursAgoOnTheSecond,
  windowWithAStraggler,
} from '../helpers/past-window';
import { createProtocolWorld, type ProtocolWorld } from '../helpers/protocol-world';

let world: ProtocolWorld;
let runtime: ToolRuntime;
beforeAll(() => {
  world = createProtocolWorld();
  runtime = world.idempotencyRuntime();
});
afterAll(() => world.destroy());
afterEach(() => jest.restoreAllMocks());

const itemOf = (recordKey: string) => callRecords(world, runtime).itemOf(recordKey);
const intentIdsOf = (tenant: string) => intentIdsInWorld(world, tenant);
const WRITES = new Set([
  'PutItemCommand',
  'UpdateItemCommand',
  'DeleteItemCommand',
  'TransactWriteItemsCommand',
  'BatchWriteItemCommand',
]);

/** Every write request sent through the world's client (its command, and whether it is an intent's), until `stop()`. */
function countWrites() {
  const name = `count-writes-${randomUUID()}`;
  const writes: Array<{ command: string; intent: boolean }> = [];
  world.client.middlewareStack.add(
    (next, context) => async (a) => {
      if (WRITES.has(context.commandName ?? '')) {
        writes.push({ command: context.commandName ?? '', intent: isIntentWrite(a.input as Record<string, unknown>) });
      }
      return next(a);
    },
    { step: 'initialize', name },
  );
  return {
    writes,
    intentWrites: () => writes.filter((w) => w.intent).map((w) => w.command),
    stop: () => world.client.middlewareStack.remove(name),
  };
}

/**
 * The next `fix the downstream key` of a call record (`SET #downstream = :downstream`, alone: not inside an
 * intent's takeover) is written by DynamoDB, but its answer is lost (a timeout after the commit).
 */
function landThenFailNextKeyFix() {
  const name = `land-then-fail-fix-${randomUUID()}`;
  world.client.middlewareStack.add(
    (next, context) => async (a) => {
      const input = a.input as Record<string, unknown>;
      if (
        context.commandName === 'UpdateItemCommand' &&
        input.UpdateExpression === 'SET #downstream = :downstream' &&
        !isIntentWrite(input)
      ) {
        world.client.middlewareStack.remove(name);
        await next(a);
        throw throttled();
      }
      return next(a);
    },
    { step: 'initialize', name },
  );
}

const intentItem = (scope: IntentRequest['scope']) => intentItemOf(world, scope);

describe('review 18: replaced windows, markers, intent_freed', () => {
  it('R18-1 the first call of a window that replaced another, its business error on attempt 1: freeing its intent costs two writes — a DeleteItem refused (billed) for the replaced_window it keeps, then the UpdateItem that leaves the marker — where one did before (the creator knows, from its own claim, that its intent replaced a window): 3 intent writes for the call, not 4', async () => {
    const { clock, t, intentKey } = await windowWithAStraggler(world, runtime, 'r18');
    clock.advance(PAST_THE_WINDOW_MS);
    t.state.customerExists = false;
    const counted = countWrites();
    const f = await t.call('f');
    counted.stop();
    expect(f).toMatchObject({ error: { code: 'not_found' } });
    expect((await itemOf(intentKey)).replaced_window).toBeDefined(); // the marker is left, as it should be
    // create (refused by the ended window), replace, and one write that frees it.
    expect(counted.intentWrites()).toHaveLength(3);
  });

  it('R18-2 a first call (a fresh key) after a window that replaced another was freed: its intent costs two writes — a create refused (billed) by the marker, then createOverMarker — where at 6d7ceab (the freed intent deleted) it cost one; one conditional write (where no holder is, the marker’s window ended before it was asked) keeps the marker’s replaced_window', async () => {
    const { clock, t, intentKey } = await windowWithAStraggler(world, runtime, 'r18');
    clock.advance(PAST_THE_WINDOW_MS);
    t.state.customerExists = false;
    expect(await t.call('f')).toMatchObject({ error: { code: 'not_found' } });
    const marker = await itemOf(intentKey);
    expect(marker.intent_owner).toBeUndefined();

    t.state.customerExists = true;
    clock.advance(1_000);
    const counted = countWrites();
    const g = await t.call('g');
    counted.stop();
    expect(g).toEqual(expect.objectContaining({ ok: true, idempotent: false }));
    expect((await itemOf(intentKey)).replaced_window).toEqual(marker.replaced_window);
    expect(counted.intentWrites()).toHaveLength(1);
  });

  it('R18-3 a call asked in a replaced window that fixed that window’s key on its record (fixPastWindowKey landed, its answer lost: parked, nothing run) is parked as “forgotten” once the window that replaced it is replaced in turn — though its record names its window’s key (rule 3: “its later attempts run under the fixed key whatever becomes of the intent”); it is never answered, where running under the key finds its window’s effect', async () => {
    const { clock, t, aKey, qKey, receipt } = await windowWithAStraggler(world, runtime, 'r18');
    clock.advance(PAST_THE_WINDOW_MS);
    expect(await t.call('f')).toMatchObject({ ok: true, idempotent: false });
    // A's record erased: Q, asked in A's window, is to run under that window's key (nothing stored answers it).
    expect((await eraseItem(world.idempotencyTable, await itemOf(aKey))).outcome).toBe('erased');
    const aDownstreamKey = (
      (await itemOf((await intentIdsOf(t.caller.tenant))[0] ?? '')).replaced_window as {
        key: string;
      }
    ).key;
    landThenFailNextKeyFix();
    expect(await t.call('q')).toMatchObject({ ok: false, error: { code: 'unavailable' } });
    // Q's record names A's window's key; none of its attempts ran.
    expect(await itemOf(qKey)).toMatchObject({ downstream_key: aDownstreamKey, attempt: 2, unrun_attempts: 2 });

    // F's window ends; G replaces it: the intent now remembers F's window, not A's.
    clock.advance(PAST_THE_WINDOW_MS);
    expect(await t.call('g')).toMatchObject({ ok: true, idempotent: false });

    const q = await t.call('q');
    expect({ effects: t.effects.size, q }).toEqual({
      effects: 3,
      q: expect.objectContaining({ ok: true, idempotent: true, receipt }),
    });
  });

  it('R18-4 a “forgotten” call resent after its last look (the completer not there yet, or its lock shorter than the last minute): its wait is capped at a last look already past, so it is parked 100 ms and told to ask again in 100 ms — again at every resend (each a takeover, an intent write, a park) until its TTL, though nothing changes it before then', async () => {
    const { clock, t, qKey } = await windowWithAStraggler(world, runtime, 'r18');
    clock.advance(PAST_THE_WINDOW_MS);
    expect(await t.call('f')).toMatchObject({ ok: true, idempotent: false });
    clock.advance(PAST_THE_WINDOW_MS);
    expect(await t.call('g')).toMatchObject({ ok: true, idempotent: false });
    expect(await t.call('q')).toMatchObject({ ok: false, status: 'pending' });
    const expiresAtS = Number((await itemOf(qKey)).expiration);
    clock.advance(lastLookMs(expiresAtS) - Date.now() + 1_000);

    const q = await t.call('q');
    expect(q).toMatchObject({ ok: false, status: 'pending' });
    // Nothing moves it before its record's last lock end (rule 2: 10 s before its TTL): that is when to ask.
    const latestLockEndMs = expiresAtS * 1000 - 10_000;
    const retryAfterMs = (q as { retry_after_ms: number }).retry_after_ms;
    expect(retryAfterMs).toBeGreaterThan(latestLockEndMs - Date.now() - 2_000);
  });

  it('R18-5 two creators over a marker, the window cycling between them: G reads a marker (the window it remembers: W0), and before its createOverMarker lands, X creates over it (W_X, its effect), W_X ends, N replaces it and frees its own (a marker remembering W_X); G’s PutItem, on “no holder” alone, passes over that other marker — G, asked inside W_X, runs under its own key beside W_X’s effect (a second effect for one window), and W_X is forgotten by the intent', async () => {
    const scope = newScope();
    const w = 60;
    const t0 = twoHoursAgoOnTheSecond();
    const a = goneHolder();
    expect(await claimIntent(world.idempotencyTable, requestOf(scope, a, w, t0))).toMatchObject({ kind: 'holds' });
    // F replaces A's window (W0), then frees its own: a marker remembering W0.
    const f = goneHolder();
    expect(await claimIntent(world.idempotencyTable, requestOf(scope, f, w, t0 + 100_000))).toMatchObject({
      kind: 'holds',
      created: true,
    });
    expect(await releaseIntent(world.idempotencyTable, intentKeyOf(scope), f)).toBe('released');

    const x = goneHolder();
    const n = goneHolder();
    beforeNext(
      world.client,
      'UpdateItemCommand',
      async () => {
        // X, asked at t0 + 120 s, creates over the marker: W_X (t0 + 120 s … + 60 s), where its effect runs.
        expect(await claimIntent(world.idempotencyTable, requestOf(scope, x, w, t0 + 120_000))).toEqual({
          kind: 'holds',
          downstreamKey: `dk-${x.claimId}`,
          created: true,
        });
        // N, asked after W_X ended, replaces it, then frees its own: a marker remembering W_X.
        expect(await claimIntent(world.idempotencyTable, requestOf(scope, n, w, t0 + 200_000))).toMatchObject({
          kind: 'holds',
          created: true,
        });
        expect(await releaseIntent(world.idempotencyTable, intentKeyOf(scope), n)).toBe('released');
        expect(await intentItem(scope)).toMatchObject({ replaced_window: { call: x.callId } });
      },
      (input) => isIntentWriteOf('create', 'UpdateItemCommand', input),
    );
    // G, asked at t0 + 130 s — inside W_X —, read the marker remembering W0 only.
    const g = goneHolder();
    const claimed = await claimIntent(world.idempotencyTable, requestOf(scope, g, w, t0 + 130_000));

    // G is W_X's: never run under its own key beside X's effect; and W_X stays remembered.
    expect(claimed).not.toEqual({ kind: 'holds', downstreamKey: `dk-${g.claimId}`, created: true });
    expect(await intentItem(scope)).toMatchObject({ replaced_window: { call: x.callId } });
  });
});
