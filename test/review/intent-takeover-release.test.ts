import { NotFoundError } from '../../lib/idempotency';
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

describe('a call that took a dedupe-window intent over from a dead holder', () => {
  it('does not free the intent on a business error while the holder whose effect may have happened is still in flight', async () => {
    const clock = movableClock();
    const caller = identity();
    const never = gate();
    const runs = runGates(3);
    let recipientKnown = true;
    // Like refund (invoice first, then the effect under the downstream key): the domain check comes
    // first, then at most one effect per downstream key.
    const effects = new Set<string>();
    const { tool } = noteTool(
      'send_note',
      async (args: NoteArgs, { downstreamKey }: ToolContext) => {
        const run = runs.started();
        if (!recipientKnown) throw new NotFoundError('text: no such recipient');
        effects.add(downstreamKey);
        if (run === 1) await never.opened; // k1's worker dies after the effect, before the receipt
        return { receipt: { note: downstreamKey.slice(-8), text: args.text }, replayed: false };
      },
      { dedupeWindowSeconds: 600 },
    );
    const call = (key: string, ms = 5_000) =>
      world.runtime.invoke(tool, caller, { idempotency_key: key, text: 'hi' }, deadline(ms));

    const k1 = call('k1', 1_000);
    await runs.reached(1);
    clock.advance(2_000); // k1 is abandoned: its effect happened, its record is in flight
    recipientKnown = false; // the world changes for a moment
    const k2 = await call('k2'); // takes the intent over (runs under k1's key): a first attempt, not_found
    recipientKnown = true;
    const { ScanCommand } = await import('@aws-sdk/client-dynamodb');
    const scan = await world.client.send(
      new ScanCommand({
        TableName: 'retrysafe-idempotency',
        FilterExpression: 'tenant = :t',
        ExpressionAttributeValues: { ':t': { S: caller.tenant } },
        ConsistentRead: true,
      }),
    );
    console.log(
      JSON.stringify(
        scan.Items?.map((i) => ({
          id: i.id?.S?.slice(0, 30),
          st: i.status?.S,
          owner: i.intent_owner?.S?.slice(0, 30),
          claim: i.claim_id?.S,
          lock: i.in_progress_expiration?.N,
          now: Date.now(),
        })),
      ),
    );
    const k3 = await call('k3'); // a fresh key, same arguments, inside k1's window

    never.open();
    await k1;
    console.log(JSON.stringify({ k2, k3, effects: [...effects], runs: runs.runs }));
    expect(k2).toMatchObject({ ok: false, error: { code: 'not_found' } });
    expect(k3).toMatchObject({ ok: true });
    expect(effects.size).toBe(1); // k1's note, found again — not a second one under a new key
  });
});
