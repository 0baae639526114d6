// Rule 3 (docs/state-machine.md): a dedupe window's intent — a window it replaced still answers the calls asked in it.
/**
 * A call asked in a window whose attempts never reached the intent (its intent write throttled, its completer
 * down) while a later window replaced it: the replacing intent keeps the window it replaced
 * (`replaced_window`), a release of it leaves that behind (a marker), and a call asked in that window is
 * answered from it (review 14, R14-4 and R14-5 in intent-review14.test.ts) — or, once nothing remembers its
 * window, runs nothing.
 */
import { completerLooksAtMs, lastLookMs } from '../../lib/idempotency/backoff';
import { eraseItem } from '../../lib/idempotency/protocol/erase';
import { callRecordOf, DEFAULT_RECORD_ATTRIBUTES } from '../../lib/idempotency/protocol/record';
import type { ToolRuntime } from '../../lib/idempotency/runtime';
import { callRecords } from '../helpers/call-records';
import { movableClock } from '../helpers/clock';
import {
  intentIdsOf as intentIdsInWorld,
  intentItemIdsOf as intentItemIdsInWorld,
  throttleNextIntentWrite,
} from '../helpers/no-effect';
import { keyedWindowTool, PAST_THE_WINDOW_MS, receiptOf, windowWithAStraggler } from '../helpers/past-window';
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
const intentItemIdsOf = (tenant: string) => intentItemIdsInWorld(world, tenant);
describe('a window an intent replaced answers the calls asked in it', () => {
  it('kept on the intent that replaced it (replaced_window: its start, end, holder call and key)', async () => {
    const { clock, t, intentKey } = await windowWithAStraggler(world, runtime, 'past');
    const before = await itemOf(intentKey);
    clock.advance(PAST_THE_WINDOW_MS);
    expect(await t.call('f')).toMatchObject({ ok: true, idempotent: false });
    expect((await itemOf(intentKey)).replaced_window).toEqual({
      end: before.window_end,
      call: before.call_id,
      key: before.downstream_key,
    });
  });

  it('its holder erased since: the call runs under that window’s key, finding its effect — one effect, answered idempotent', async () => {
    const { clock, t, aKey, receipt } = await windowWithAStraggler(world, runtime, 'past');
    clock.advance(PAST_THE_WINDOW_MS);
    expect(await t.call('f')).toMatchObject({ ok: true });
    expect((await eraseItem(world.idempotencyTable, await itemOf(aKey))).outcome).toBe('erased');

    const q = await t.call('q');
    expect({ effects: t.effects.size, q }).toEqual({
      effects: 2,
      q: expect.objectContaining({ ok: true, idempotent: true, receipt }),
    });
  });

  it('freed by the window that replaced it (a marker left), then created over by another call: the window is kept, and still answers', async () => {
    const { clock, t, intentKey, receipt } = await windowWithAStraggler(world, runtime, 'past');
    clock.advance(PAST_THE_WINDOW_MS);
    t.state.customerExists = false;
    expect(await t.call('f')).toMatchObject({ error: { code: 'not_found' } });
    const marker = await itemOf(intentKey);
    expect({ holder: marker.intent_owner, replaced: marker.replaced_window !== undefined }).toEqual({
      holder: undefined,
      replaced: true,
    });

    t.state.customerExists = true;
    clock.advance(1_000);
    const g = await t.call('g');
    expect(g).toEqual(expect.objectContaining({ ok: true, idempotent: false }));
    expect((await itemOf(intentKey)).replaced_window).toEqual(marker.replaced_window);
    const q = await t.call('q');
    expect({ effects: t.effects.size, q }).toEqual({
      effects: 2,
      q: expect.objectContaining({ ok: true, idempotent: true, receipt }),
    });
  });

  it('erase deletes a marker', async () => {
    const { clock, t, intentKey } = await windowWithAStraggler(world, runtime, 'past');
    clock.advance(PAST_THE_WINDOW_MS);
    t.state.customerExists = false;
    expect(await t.call('f')).toMatchObject({ error: { code: 'not_found' } });
    expect((await eraseItem(world.idempotencyTable, await itemOf(intentKey))).outcome).toBe('erased');
    expect(await intentItemIdsOf(t.caller.tenant)).toEqual([]);
  });

  it('a release of an intent that replaced none leaves a marker with nothing of a call in it, which the next create passes in one write', async () => {
    const t = keyedWindowTool(world, runtime, 'past');
    t.state.customerExists = false;
    expect(await t.call('f')).toMatchObject({ error: { code: 'not_found' } });
    const [intentKey] = await intentItemIdsOf(t.caller.tenant);
    expect(Object.keys(await itemOf(intentKey ?? '')).sort()).toEqual(['expiration', 'id', 'tenant', 'tool']);

    t.state.customerExists = true;
    expect(await t.call('g')).toEqual(expect.objectContaining({ ok: true, idempotent: false }));
    expect(await intentIdsOf(t.caller.tenant)).toEqual([intentKey]);
  });

  it('asked after that window ended, within a window’s length before the next began: that next window’s (one effect)', async () => {
    const clock = movableClock();
    const t = keyedWindowTool(world, runtime, 'past');
    expect(await t.call('a')).toMatchObject({ ok: true, idempotent: false });
    clock.advance(PAST_THE_WINDOW_MS);
    throttleNextIntentWrite(world, 'create');
    expect(await t.call('q')).toMatchObject({ ok: false });
    clock.advance(60_000);
    const f = await t.call('f');
    expect(f).toEqual(expect.objectContaining({ ok: true, idempotent: false }));
    const q = await t.call('q');
    expect({ effects: t.effects.size, q }).toEqual({
      effects: 2,
      q: expect.objectContaining({ ok: true, idempotent: true, receipt: receiptOf(f) }),
    });
  });

  it('replaced twice (nothing remembers it): the call runs nothing, parked until its last look (where the completer gives it up), and is told so', async () => {
    const { clock, t, qKey } = await windowWithAStraggler(world, runtime, 'past');
    clock.advance(PAST_THE_WINDOW_MS);
    expect(await t.call('f')).toMatchObject({ ok: true, idempotent: false });
    clock.advance(PAST_THE_WINDOW_MS);
    expect(await t.call('g')).toMatchObject({ ok: true, idempotent: false });

    const q = await t.call('q');
    const qItem = await itemOf(qKey);
    const lastLook = lastLookMs(Number(qItem.expiration));
    expect({ effects: t.effects.size, q }).toEqual({
      effects: 3,
      q: expect.objectContaining({ ok: false, status: 'pending' }),
    });
    // Due at its last look (its lock ends the backoff, at least the stream's window, before it: review 29).
    expect(Math.abs(completerLooksAtMs(callRecordOf(qItem, DEFAULT_RECORD_ATTRIBUTES)!) - lastLook)).toBeLessThan(
      1_000,
    );
    const retryAtMs = Date.now() + (q as { retry_after_ms: number }).retry_after_ms;
    expect(Math.abs(retryAtMs - Number(qItem.in_progress_expiration))).toBeLessThan(1_000);
  });
});
