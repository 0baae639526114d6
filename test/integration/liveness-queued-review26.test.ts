// Rule 8 (docs/state-machine.md): every call ends, in a time its answers state.
/**
 * Review 26 F2: a call queued behind a dedupe window's holder was parked until its own last look
 * (`parkLimitMs`); since fc9911c (`expiresBeforeRerun` with `>=`, `tooLateToRerun`) that look gives it up
 * (`expiring`) under every completer — also when the holder settled long before. docs/state-machine.md's
 * Liveness ("handed off" row) promises the last look gives it up "if that call has not settled". Fixed at
 * the park's limit: such a call is parked until its wait look, a minute before its last look
 * (`WAIT_LOOK_BEFORE_LAST_LOOK_MS`), where a re-run finds its holder settled — or parks it again until its
 * last look (liveness-review25.test.ts's `queuedUntilItsLastLook`).
 */
import { randomUUID } from 'node:crypto';
import { lastLookMs, WAIT_LOOK_BEFORE_LAST_LOOK_MS } from '../../lib/idempotency/backoff';
import { Completer } from '../../lib/idempotency/completer';
import { InFlightError } from '../../lib/idempotency/errors';
import { DEFAULT_RECORD_ATTRIBUTES } from '../../lib/idempotency/protocol/record';
import type { ToolRuntime } from '../../lib/idempotency/runtime';
import { callRecords } from '../helpers/call-records';
import { ownIdempotencyTable } from '../helpers/own-table';
import { createProtocolWorld, deadline, identity, type ProtocolWorld } from '../helpers/protocol-world';
import { noteTool } from '../helpers/tools';

ownIdempotencyTable('liveness-queued-review26');
let world: ProtocolWorld;
let runtime: ToolRuntime;
beforeAll(() => {
  world = createProtocolWorld();
  runtime = world.idempotencyRuntime();
});
afterAll(() => world.destroy());
afterEach(() => jest.restoreAllMocks());

const itemOf = (key: string) => callRecords(world, runtime).itemOf(key);

function clockAt(atMs: number): void {
  jest.restoreAllMocks();
  jest.spyOn(Date, 'now').mockImplementation(() => atMs);
}

describe.each([
  ['retrysafe dev (10 s lock)', 10_000],
  ['the stack / retrysafe complete (60 s lock)', 60_000],
])('review26 F2: a queued call whose window holder settled — %s', (_name, lockMs) => {
  it('is looked at a minute before its last look, and run then once the call it was queued behind has settled', async () => {
    let runs = 0;
    const { tool } = noteTool(
      `window_${randomUUID().slice(0, 8)}`,
      async (a) => {
        runs += 1;
        if (runs === 1) throw new InFlightError('the provider still runs this key', 10 * 3_600_000);
        return { receipt: { note_id: `note_${randomUUID()}`, text: a.text }, replayed: false };
      },
      { dedupeWindowSeconds: 600, ttlSeconds: 3_600 },
    );
    const caller = identity();
    const t0 = Date.now();
    clockAt(t0);
    expect(await runtime.invoke(tool, caller, { idempotency_key: 'h', text: 'same' }, deadline())).toMatchObject({
      status: 'pending',
    });
    clockAt(t0 + 1_000);
    expect(await runtime.invoke(tool, caller, { idempotency_key: 'q', text: 'same' }, deadline())).toMatchObject({
      status: 'pending',
    });
    const keys = (await world.idempotencyRecordKeys(caller.tenant)).map((k) => k.id);
    const items = await Promise.all(keys.map(itemOf));
    // Q: the call record queued behind H (`waited_on`); H: the other call record (the intent has no attempt).
    const q = items.find((item) => item.waited_on !== undefined)!;
    const h = items.find((item) => item !== q && item.attempt !== undefined)!;
    const expiresAtS = Number(q.expiration);
    const waitLook = lastLookMs(expiresAtS) - WAIT_LOOK_BEFORE_LAST_LOOK_MS;
    expect(q).toMatchObject({ attempt: 1, queued_attempts: 1, in_progress_expiration: waitLook });

    // The holder settles a minute later: the provider's wait ended, H's resend runs and stores its receipt.
    clockAt(t0 + 60_000);
    // The provider's wait is over sooner than it said: H's lock is moved to then, and H's resend takes it
    // over and stores its receipt.
    await callRecords(world, runtime).setAttributes(String(h.id), { in_progress_expiration: t0 + 59_000 });
    const hAgain = await runtime.invoke(tool, caller, { idempotency_key: 'h', text: 'same' }, deadline());
    expect(hAgain).toMatchObject({ ok: true });
    expect(await itemOf(String(h.id))).toMatchObject({ status: 'COMPLETED' });

    // Q's recheck: at its lock's end, its wait look (completerLooksAtMs), under this completer's lock.
    clockAt(waitLook + 1);
    const completer = new Completer({
      client: world.client,
      runtime,
      tools: [tool],
      queue: { send: async () => undefined },
      tableName: world.idempotencyTable.tableName,
      attributes: DEFAULT_RECORD_ATTRIBUTES,
    });
    const outcome = await completer.onRecheck({ key: String(q.id), claim: String(q.claim_id) }, deadline(lockMs));
    const after = await itemOf(String(q.id));
    // Its holder settled 58 minutes before: the look runs it (the doc's "if that call has not settled") —
    // H's outcome answers it, and nothing of Q's own ran.
    expect({ outcome, status: after.status, stalled_reason: after.stalled_reason, runs }).toEqual({
      outcome: 'finished',
      status: 'COMPLETED',
      stalled_reason: undefined,
      runs: 2,
    });
  });
});
