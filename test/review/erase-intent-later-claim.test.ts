import { TABLES } from '../../app/tables';
import { eraseTenant } from '../../lib/admin/erase-tenant';
import type { ToolContext } from '../../lib/idempotency/tool';
import { gate, type NoteArgs, noteTool } from '../helpers/tools';
import { createWorld, deadline, identity, type World } from '../helpers/world';
import { movableClock, runGates } from './helpers';

let world: World;
beforeAll(() => {
  world = createWorld();
});
afterAll(() => world.destroy());
afterEach(() => jest.restoreAllMocks());

describe('erase and a dedupe-window intent whose holder is in flight under a later claim', () => {
  it('keeps the intent while its holder record is in flight (rule 6), so a fresh key in the window causes no second effect', async () => {
    const clock = movableClock();
    const caller = identity();
    const never = gate();
    const runs = runGates(4);
    // Effects are keyed by downstream key: at most one per key, as every tool guarantees.
    const effects = new Set<string>();
    const { tool } = noteTool(
      'send_note',
      async (args: NoteArgs, { downstreamKey }: ToolContext) => {
        const run = runs.started();
        effects.add(downstreamKey);
        if (run <= 3) await never.opened; // the first three attempts hang after making the effect
        return { receipt: { note: downstreamKey.slice(-8), text: args.text }, replayed: false };
      },
      { dedupeWindowSeconds: 600 },
    );
    const call = (key: string, ms = 1_000) =>
      world.runtime.invoke(tool, caller, { idempotency_key: key, text: 'hi' }, deadline(ms));

    // k1 creates the intent, makes the effect under its own downstream key D1 and dies.
    const hung: Promise<unknown>[] = [];
    hung.push(call('k1'));
    await runs.reached(1);
    clock.advance(2_000);
    // k2 (fresh key, same arguments, inside the window) takes the intent over: D1 is fixed on its
    // record, the intent swapped to (k2, claim c1). It dies too.
    hung.push(call('k2'));
    await runs.reached(2);
    clock.advance(2_000);
    // k2's retry takes its own record over (claim c2). Its record has D1 fixed, so it never touches the
    // intent, which still names (k2, c1). This attempt is live.
    hung.push(call('k2', 60_000));
    await runs.reached(3);

    // Erase while k1 and k2 are in flight: both records are kept — and so must be the intent they hold.
    const report = await eraseTenant(world.client, { tenant: caller.tenant }, process.env, TABLES);

    // A fresh key, same arguments, still inside k1's window.
    await call('k3', 5_000);

    never.open();
    await Promise.allSettled(hung);
    expect(effects.size).toBe(1); // one intent inside one window: one effect
    expect(report.tables.idempotency).toMatchObject({ found: 3, inFlight: 3, deleted: 0 });
  });
});
