// Rule 3 (docs/state-machine.md): a dedupe window's intent — markers, the window a marker remembers, and erase.
/**
 * Review 19 (helper of h-review19), of ed70adb..f800683 (R18's fixes: create as one UpdateItem over a marker,
 * release always leaves a marker, a forgotten call runs under a fixed key, the park's limit past the last
 * look). Each R19 test fails on f800683's lib/: it states the defect (the correct behaviour), and turns green
 * once it is fixed.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { eraseItem } from '../../lib/idempotency/protocol/erase';
import type { ToolRuntime } from '../../lib/idempotency/runtime';
import { callRecords } from '../helpers/call-records';
import { recordIdsOf as recordIdsInWorld } from '../helpers/no-effect';
import { PAST_THE_WINDOW_MS, windowWithAStraggler } from '../helpers/past-window';
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
const recordIdsOf = (tenant: string) => recordIdsInWorld(world, tenant);
describe('review 19: markers, the windows they remember, erase', () => {
  // Left open (docs/state-machine.md, rule 6, "Left open"): erase deletes an intent or marker with the windows it
  // remembers while a call asked in one of them, none of whose attempts reached the intent, is in flight (erase
  // cannot see such a call). it.failing: it starts failing once erase keeps what such calls need.
  it('R19-1 a tenant erase while Q, asked in A’s window, is in flight (kept): A’s record is tombstoned and the marker remembering A’s window deleted (“a marker where none holds it”) — Q then creates a fresh intent and runs under its own key: a second effect for A’s window, answered idempotent: false, where with the marker kept it runs under A’s window’s key and finds A’s effect (rule 3: “none stored (erased since): it runs under that window’s key”)', async () => {
    const { clock, t, aKey, qKey, intentKey, receipt } = await windowWithAStraggler(world, runtime, 'r19');
    // F, after A's window, replaces it and fails its first run (nothing happened): a marker remembering A's window.
    clock.advance(PAST_THE_WINDOW_MS);
    t.state.customerExists = false;
    expect(await t.call('f')).toMatchObject({ error: { code: 'not_found' } });
    expect((await itemOf(intentKey)).replaced_window).toMatchObject({ call: expect.stringContaining(aKey) });
    t.state.customerExists = true;

    // The tenant's erase, item by item as its scan finds them: Q kept (in flight), A tombstoned, the marker deleted.
    expect((await eraseItem(world.idempotencyTable, await itemOf(qKey))).outcome).toBe('in_flight');
    expect((await eraseItem(world.idempotencyTable, await itemOf(aKey))).outcome).toBe('erased');
    await eraseItem(world.idempotencyTable, await itemOf(intentKey));

    // Q's resend: asked in A's window, none of whose outcome is stored any more — run under that window's key.
    const q = await t.call('q');
    expect({ effects: t.effects.size, q }).toEqual({
      effects: 1,
      q: expect.objectContaining({ ok: true, idempotent: true, receipt }),
    });
  });

  // Left open with R19-1.
  it('R19-2 the same with a held intent: F replaced A’s window and completed (its own effect); the tenant’s erase, Q in flight (kept), tombstones A and F and deletes the intent (its runners settled: “an intent goes with its settled holder”) with the window it remembers — Q then runs under its own key: a second effect for A’s window', async () => {
    const { clock, t, aKey, qKey, intentKey, receipt } = await windowWithAStraggler(world, runtime, 'r19');
    clock.advance(PAST_THE_WINDOW_MS);
    expect(await t.call('f')).toMatchObject({ ok: true, idempotent: false });
    expect((await itemOf(intentKey)).replaced_window).toMatchObject({ call: expect.stringContaining(aKey) });
    const fKey = (await recordIdsOf(t.caller.tenant)).find((id) => id !== aKey && id !== qKey) ?? '';

    expect((await eraseItem(world.idempotencyTable, await itemOf(qKey))).outcome).toBe('in_flight');
    expect((await eraseItem(world.idempotencyTable, await itemOf(aKey))).outcome).toBe('erased');
    expect((await eraseItem(world.idempotencyTable, await itemOf(fKey))).outcome).toBe('erased');
    await eraseItem(world.idempotencyTable, await itemOf(intentKey));

    const q = await t.call('q');
    expect({ effects: t.effects.size, q }).toEqual({
      effects: 2, // A's and F's
      q: expect.objectContaining({ ok: true, idempotent: true, receipt }),
    });
  });

  // Found while fixing R19-1/2: the same straggler, between erase's tombstone of the holder and its write of the
  // intent (a scan hands them over in any order). The rule that let it run anew: "holder erased, no other runner
  // in flight: held afresh under this call's key" — for a call asked before the erase, a second effect.
  it('R19-4 a tenant erase while Q, asked in A’s window (still open), is in flight (kept): A’s record is tombstoned, the intent not yet reached by the erase — Q’s resend meets A’s intent with its holder erased and no runner in flight, and held it afresh under its own key: a second effect for A’s window, where it is that window’s call and runs under its key', async () => {
    const { t, aKey, qKey, intentKey, receipt } = await windowWithAStraggler(world, runtime, 'r19');
    expect((await eraseItem(world.idempotencyTable, await itemOf(qKey))).outcome).toBe('in_flight');
    expect((await eraseItem(world.idempotencyTable, await itemOf(aKey))).outcome).toBe('erased');

    const q = await t.call('q');
    expect({ effects: t.effects.size, q, intent: Object.keys(await itemOf(intentKey)).sort() }).toEqual({
      effects: 1,
      q: expect.objectContaining({ ok: true, idempotent: true, receipt }),
      // Q's claim ended the erased holder's window as erase would have: a marker of no tenant.
      intent: ['expiration', 'id', 'replaced_window'],
    });
  });

  it('R19-3 docs: rule 3 and the intent table still say a call whose window nothing remembers “never runs, parked until its last look” — since R18-3 one whose record names a key an attempt fixed runs under it, and (R18-4) one past its last look is parked to its last lock end; the code (`forgotten`, `parkLimitMs`) and the rules it is held to disagree', () => {
    const doc = readFileSync(join(__dirname, '..', '..', 'docs', 'state-machine.md'), 'utf8');
    const row = doc
      .split('\n')
      .find((line) => line.startsWith('| it replaced a window whose predecessor had not ended either'));
    const rule = doc.slice(doc.indexOf('Asked before even the window'), doc.indexOf('A call runs under an intent'));
    expect({ row, rule }).toEqual({
      row: expect.stringMatching(/fixed/),
      rule: expect.stringMatching(/fixed/),
    });
  });
});
