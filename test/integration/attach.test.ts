// Rule 4 (docs/state-machine.md): every pending is pollable.
// Rule 5 (docs/state-machine.md): exactly one answer per effect says idempotent: false.
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { InFlightError, NotFoundError } from '../../lib/idempotency';
import { ATTACH_ANSWER_MARGIN_MS, ATTACH_MAX_READS } from '../../lib/idempotency/attach';
import { DEFAULT_RECORD_ATTRIBUTES } from '../../lib/idempotency/protocol/record';
import { type AttachOptions, type CallOutcome, ToolRuntime } from '../../lib/idempotency/runtime';
import { createDynamoDBClient } from '../../lib/store/client';
import { createProtocolWorld, deadline, identity, type ProtocolWorld } from '../helpers/protocol-world';
import { gate, noteTool } from '../helpers/tools';

/**
 * Attach (docs/state-machine.md, "Attach"; rule 4, rule 5): a duplicate that arrives while the first
 * attempt of its call runs waits for that attempt's outcome — reading, never writing — and answers it
 * as a replay when it comes within the cap and its own time; else `pending`. The duplicate runs on a
 * client of its own, so what it sent is counted from the world (its client's middleware), not mocked.
 */
let world: ProtocolWorld;
beforeAll(() => {
  world = createProtocolWorld();
});
afterAll(() => world.destroy());

/** A runtime for the duplicate on its own client, counting every request it sends by command. */
function duplicateRuntime(attach?: AttachOptions) {
  const client: DynamoDBClient = createDynamoDBClient(process.env);
  const sent: string[] = [];
  client.middlewareStack.add(
    (next, context) =>
      async function countRequest(args) {
        sent.push(String(context.commandName).replace(/Command$/, ''));
        return next(args);
      },
    { step: 'initialize', name: 'countDuplicateRequests' },
  );
  const outcomes: CallOutcome[] = [];
  const runtime = new ToolRuntime({
    client,
    tableName: world.idempotencyTable.tableName,
    attributes: DEFAULT_RECORD_ATTRIBUTES,
    onOutcome: (outcome) => void outcomes.push(outcome),
    ...(attach ? { attach } : {}),
  });
  return {
    runtime,
    outcomes,
    count: (command: string) => sent.filter((name) => name === command).length,
    /** Writes that took effect or not: a refused claim is a PutItem too. */
    writes: () => sent.filter((name) => /^(Put|Update|Delete)Item$/.test(name)),
    destroy: () => client.destroy(),
  };
}

/** A note tool held open: each execution opens `started`, then waits for `release` (or fails as `fail` says). */
function heldNote(fail?: () => Error) {
  const started = gate();
  const release = gate();
  const held = noteTool('send_note', async (args) => {
    started.open();
    await release.opened;
    if (fail) throw fail();
    return { receipt: { note_id: 'note_1', text: args.text }, replayed: false };
  });
  return { ...held, started, release };
}

const call = { idempotency_key: 'k1', text: 'hi' };

describe('attach: a duplicate of a call in flight waits for its outcome', () => {
  it('answers the first attempt’s outcome as a replay when it comes within the cap, having written nothing', async () => {
    const caller = identity();
    const { tool, execute, started, release } = heldNote();
    const duplicate = duplicateRuntime();

    const first = world.runtime.invoke(tool, caller, call, deadline(5_000));
    await started.opened;
    const asked = Date.now();
    const waiting = duplicate.runtime.invoke(tool, caller, call, deadline(5_000));
    setTimeout(release.open, 300);
    const [firstAnswer, duplicateAnswer] = await Promise.all([first, waiting]);
    const waitedMs = Date.now() - asked;

    expect(firstAnswer).toEqual({ ok: true, idempotent: false, key: 'k1', receipt: { note_id: 'note_1', text: 'hi' } });
    expect(duplicateAnswer).toEqual({ ...firstAnswer, idempotent: true });
    expect(execute).toHaveBeenCalledTimes(1);
    // Its one write was the claim the live attempt refused; the rest were reads.
    expect(duplicate.writes()).toEqual(['PutItem']);
    expect(duplicate.count('GetItem')).toBeGreaterThanOrEqual(1);
    expect(duplicate.count('GetItem')).toBeLessThanOrEqual(ATTACH_MAX_READS);
    expect(duplicate.outcomes).toEqual([expect.objectContaining({ outcome: 'replayed', replay: 'client_key' })]);
    expect(waitedMs).toBeGreaterThanOrEqual(250);
    expect(waitedMs).toBeLessThan(2_000);
    duplicate.destroy();
  });

  it('answers pending, as without attaching, when the first attempt outlasts the cap', async () => {
    const caller = identity();
    const { tool, execute, started, release } = heldNote();
    const duplicate = duplicateRuntime({ maxWaitMs: 400 });

    const first = world.runtime.invoke(tool, caller, call, deadline(5_000));
    await started.opened;
    const asked = Date.now();
    const answer = await duplicate.runtime.invoke(tool, caller, call, deadline(5_000));
    const waitedMs = Date.now() - asked;
    release.open();
    await first;

    expect(answer).toEqual({ ok: false, status: 'pending', key: 'k1', retry_after_ms: 1_000 });
    expect(waitedMs).toBeGreaterThanOrEqual(400);
    expect(waitedMs).toBeLessThan(1_500);
    expect(duplicate.writes()).toEqual(['PutItem']);
    // After 50, 100 and 200 ms, then at the cap (if the reads' own time left any of it): three or four reads.
    expect(duplicate.count('GetItem')).toBeGreaterThanOrEqual(3);
    expect(duplicate.count('GetItem')).toBeLessThanOrEqual(4);
    expect(execute).toHaveBeenCalledTimes(1);
    duplicate.destroy();
  });

  it('claims and runs the call itself when the first attempt’s business error released the key (rule 4)', async () => {
    const caller = identity();
    const { tool, execute, started, release } = heldNote(() => new NotFoundError('no such recipient'));
    const duplicate = duplicateRuntime();

    const first = world.runtime.invoke(tool, caller, call, deadline(5_000));
    await started.opened;
    const waiting = duplicate.runtime.invoke(tool, caller, call, deadline(5_000));
    setTimeout(release.open, 200);
    const [firstAnswer, duplicateAnswer] = await Promise.all([first, waiting]);

    // The retry rule 4 promises is the duplicate itself: it ran and got the same error, nothing stored.
    const notFound = { ok: false, error: { code: 'not_found', message: 'no such recipient' } };
    expect(firstAnswer).toEqual(notFound);
    expect(duplicateAnswer).toEqual(notFound);
    expect(execute).toHaveBeenCalledTimes(2);
    expect(await world.runtime.readCall('send_note', caller, 'k1')).toBeUndefined();
    duplicate.destroy();
  });

  it('takes the call over at its lock’s end when the first worker died while it waited (abandoned)', async () => {
    const caller = identity();
    const { tool, execute, started } = heldNote(); // never released: the first worker is never heard of again
    const duplicate = duplicateRuntime();

    void world.runtime.invoke(tool, caller, call, deadline(600));
    await started.opened;
    const asked = Date.now();
    // The first execution stays held; any later one (the takeover's) answers at once.
    execute.mockImplementation(async (args) => ({ receipt: { note_id: 'note_2', text: args.text }, replayed: false }));
    const answer = await duplicate.runtime.invoke(tool, caller, call, deadline(5_000));
    const waitedMs = Date.now() - asked;

    // It waited for the lock (≈ 600 ms from the first claim), then ran the call as its second attempt.
    expect(answer).toEqual({ ok: true, idempotent: false, key: 'k1', receipt: { note_id: 'note_2', text: 'hi' } });
    expect(waitedMs).toBeLessThan(1_500);
    expect(execute).toHaveBeenCalledTimes(2);
    // Its refused claim; then, once the record was read abandoned, the claim phase again (claim refused,
    // takeover) and the store.
    expect(duplicate.writes()).toEqual(['PutItem', 'PutItem', 'UpdateItem', 'UpdateItem']);
    expect(await world.runtime.readCall('send_note', caller, 'k1')).toMatchObject({ status: 'COMPLETED', attempt: 2 });
    duplicate.destroy();
  });

  it('waits out a provider’s park (nobody runs it before its lock ends), then runs the call itself', async () => {
    const caller = identity();
    let busy = true;
    const { tool, execute } = noteTool('send_note', async (args) => {
      if (busy) throw new InFlightError('the provider is still processing this key', 300);
      return { receipt: { text: args.text }, replayed: true };
    });
    const duplicate = duplicateRuntime();

    const first = await world.runtime.invoke(tool, caller, call, deadline(5_000));
    busy = false;
    const asked = Date.now();
    const answer = await duplicate.runtime.invoke(tool, caller, call, deadline(5_000));
    const waitedMs = Date.now() - asked;

    expect(first).toMatchObject({ ok: false, status: 'pending' });
    expect(answer).toEqual({ ok: true, idempotent: true, key: 'k1', receipt: { text: 'hi' } });
    expect(waitedMs).toBeGreaterThanOrEqual(200);
    expect(execute).toHaveBeenCalledTimes(2);
    duplicate.destroy();
  });

  it.each([
    ['no time to wait: pending at once, nothing read', ATTACH_ANSWER_MARGIN_MS - 100, 0, 0],
    ['a little time: pending within it', ATTACH_ANSWER_MARGIN_MS + 300, 1, 4],
  ])('respects its own deadline — %s', async (_label, timeLeftMs, minReads, maxReads) => {
    const caller = identity();
    const { tool, started, release } = heldNote();
    const duplicate = duplicateRuntime();

    const first = world.runtime.invoke(tool, caller, call, deadline(5_000));
    await started.opened;
    const asked = Date.now();
    const answer = await duplicate.runtime.invoke(tool, caller, call, deadline(timeLeftMs));
    const waitedMs = Date.now() - asked;
    release.open();
    await first;

    expect(answer).toMatchObject({ ok: false, status: 'pending', key: 'k1' });
    expect(waitedMs).toBeLessThan(Math.max(0, timeLeftMs - ATTACH_ANSWER_MARGIN_MS) + 300);
    expect(duplicate.count('GetItem')).toBeGreaterThanOrEqual(minReads);
    expect(duplicate.count('GetItem')).toBeLessThanOrEqual(maxReads);
    duplicate.destroy();
  });

  it('never makes the completer (a resume) wait: it answers pending at once', async () => {
    const caller = identity();
    const { tool, started, release } = heldNote();
    const completer = duplicateRuntime();

    const first = world.runtime.invoke(tool, caller, call, deadline(5_000));
    await started.opened;
    const running = await world.runtime.readCall('send_note', caller, 'k1');
    const answer = await completer.runtime.invoke(tool, caller, call, deadline(5_000), {
      resume: { claimId: running!.claimId! },
    });
    release.open();
    await first;

    expect(answer).toMatchObject({ ok: false, status: 'pending' });
    expect(completer.count('GetItem')).toBe(0);
    expect(completer.writes()).toEqual(['UpdateItem']); // the refused takeover
    completer.destroy();
  });
});
