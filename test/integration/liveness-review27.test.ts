// Rule 8 (docs/state-machine.md): every call ends, in a time its answers state.
/**
 * Review 27 of 40337c2 (review 26's fixes: `givesUpAtNextLook` at `nextLookAtMs`, `expiresBeforeRerun`'s
 * one-second granularity, `parkLimitMs`'s wait look). Each `describe` holds one finding; its test fails on
 * 40337c2 and passes once the finding is fixed. F1 and F3 are fixed at their rules (`expiresBeforeRerun`
 * judges by `LATEST_LOOK_AFTER_DUE_MS`, cron's minute; `nextLookAtMs` waits for the stream's image of every
 * park); F2 is decided by F1's rule: a waiter due within a minute of its last look is given up under every
 * completer, its answers say so, and its resend is answered by its holder's outcome.
 */
import { marshall } from '@aws-sdk/util-dynamodb';
import { nextAfterRead } from '../../lib/api/next-step';
import { completerLooksAtMs, lastLookMs } from '../../lib/idempotency/backoff';
import type { Recheck } from '../../lib/idempotency/completer';
import { expiresAtSOf } from '../../lib/idempotency/derivation';
import { InFlightError } from '../../lib/idempotency/errors';
import type { ToolRuntime } from '../../lib/idempotency/runtime';
import { readOperation } from '../../lib/reads/operation';
import { callRecords } from '../helpers/call-records';
import { livenessWorld } from '../helpers/liveness-world';
import { deadline, identity, type ProtocolWorld } from '../helpers/protocol-world';
import { noteTool } from '../helpers/tools';

const live = livenessWorld('liveness-review27');
const { clockAt, completerFor, scheduleOf } = live;
let world: ProtocolWorld;
let runtime: ToolRuntime;
beforeAll(() => {
  ({ world, runtime } = live);
});

const sendNote = noteTool('send_note', async (a) => ({
  receipt: { note_id: 'note_1', text: a.text },
  replayed: false,
})).tool;

/** An abandoned send_note call (attempt `attempt`, its tool ran and failed: not unrun) whose lock ends at `lockEndsMs(expiresAtS)`. */
async function abandonedAt(lockEndsMs: (expiresAtS: number) => number, attempt = 1) {
  const records = callRecords(world, runtime);
  const call = await records.abandonedCall();
  const item = await records.itemOf(call.recordKey);
  const expiresAtS = Number(item.expiration);
  await records.setAttributes(call.recordKey, { attempt, in_progress_expiration: lockEndsMs(expiresAtS) });
  return { ...call, expiresAtS, lastLook: lastLookMs(expiresAtS), itemOf: records.itemOf };
}

async function poll(c: { caller: ReturnType<typeof identity>; key: string }) {
  const read = (await readOperation({ runtime, toolNames: ['send_note'] }, c.caller, 'send_note', c.key)) as {
    status: string;
    retry_after_ms?: number;
    gives_up?: string;
  };
  const next = nextAfterRead(read as never);
  return { read, says: read.gives_up === undefined && /re-runs it/.test(next.message ?? '') ? 'runs it' : 'gives up' };
}

describe('review27 F1: the completers that look later than the stated wait (`retrysafe dev`, `retrysafe complete`) give up a call the answers said is re-run', () => {
  it.each([
    // `retrysafe dev`: a pass every 5 s (after the last one ended), 10 s lock — the first pass at or after the
    // due time comes up to 5 s after it. Due 3 s before the last look, that pass is 1 s past it.
    ['retrysafe dev (a pass every 5 s, 10 s lock)', 3_000, 2_000, 4_000, 10_000],
    // `retrysafe complete` from cron, a minute apart, 60 s lock ("within a minute of the stack's schedule";
    // WAIT_LOOK_BEFORE_LAST_LOOK_MS allows for it). Due 30 s before the last look, the run after it is 15 s past it.
    ['retrysafe complete from cron (a run a minute, 60 s lock)', 30_000, 10_000, 45_000, 60_000],
  ])('%s', async (_name, dueBeforeLastLookMs, polledBeforeDueMs, lookAfterDueMs, lockMs) => {
    // Attempt 2 (its backoff 30 s): its attempt failed 30 s before it is due.
    const c = await abandonedAt((expiresAtS) => lastLookMs(expiresAtS) - dueBeforeLastLookMs - 30_000, 2);
    const dueMs = c.lastLook - dueBeforeLastLookMs;
    clockAt(dueMs - polledBeforeDueMs);
    const { read, says } = await poll(c);
    expect(read).toMatchObject({ status: 'abandoned', retry_after_ms: polledBeforeDueMs });
    // This completer's first look at or after the wait given.
    clockAt(dueMs + lookAfterDueMs);
    const outcome = await completerFor([sendNote]).onRecheck({ key: c.recordKey, claim: c.claim }, deadline(lockMs));
    const did = outcome === 'gave_up' ? 'gives up' : 'runs it';
    expect({ answers: says, completer: did }).toEqual({ answers: did, completer: did });
  });
});

describe('review27 F3: a first attempt that ran and failed just before its last look — the stack sees its park only after the stream batching window', () => {
  it('review27 F3 (fixed with review 29, F1: every completer looks at a lock’s end a park wrote the stream’s window after it, and the answers say so): its poll states the look the stack makes, 10 s after the park, and what it does', async () => {
    // Attempt 1 failed (PARK_NOW: its lock ends at the failure) 5 s before its last look; its tool ran. Its
    // answers used to say "re-runs it in 1 s" (a stream delay only for calls none of whose attempts ran).
    // 15 s before: a park within the window before its last look is looked at that look, a few seconds before
    // the stack can see it (Left open: its hint is short, its give-up words right).
    const c = await abandonedAt((expiresAtS) => lastLookMs(expiresAtS) - 15_000);
    const parkedAtMs = c.lastLook - 15_000;
    clockAt(parkedAtMs + 1);
    const { read, says } = await poll(c);
    expect(read).toMatchObject({ status: 'abandoned' });
    // The stack: the park's image reaches the completer after the stream's batching window (10 s; the
    // window `nextLookAtMs` itself allows a queued call), its recheck is due at once (delay 0).
    clockAt(parkedAtMs + 10_000);
    const sent: Recheck[] = [];
    const completer = completerFor([sendNote], sent);
    const image = await c.itemOf(c.recordKey);
    await completer.onStream([
      {
        eventName: 'MODIFY',
        dynamodb: {
          Keys: marshall({ id: c.recordKey }),
          NewImage: marshall(image, { removeUndefinedValues: true }),
          SequenceNumber: '1',
        },
      },
    ]);
    expect(sent).toMatchObject([{ key: c.recordKey, delaySeconds: 0 }]);
    const outcome = await completer.onRecheck({ key: c.recordKey, claim: c.claim }, deadline(60_000));
    const did = outcome === 'gave_up' ? 'gives up' : 'runs it';
    expect({
      answers: says,
      completer: did,
      lookAfterPollMs: Date.now() - parkedAtMs,
    }).toEqual({ answers: did, completer: did, lookAfterPollMs: 1 + (read.retry_after_ms ?? 0) });
  });
});

describe.each([
  ['retrysafe dev (10 s lock)', 10_000],
  ['the stack / retrysafe complete (60 s lock)', 60_000],
])('review27 F2: a waiter whose holder settles within the minute before its last look — %s', (_name, lockMs) => {
  it('a queued call whose (parked) holder ends and settles 20 s before the waiter’s last look is given up (decided: every completer gives up a call due within a minute of its last look, and its answers say so); its resend is answered by the holder’s outcome', async () => {
    let runs = 0;
    const { tool } = noteTool(
      `window_${Math.random().toString(36).slice(2, 10)}`,
      async (a) => {
        runs += 1;
        if (runs === 1) throw new InFlightError('the provider still runs this key', holderWaitMs);
        return { receipt: { note_id: `note_${runs}`, text: a.text }, replayed: false };
      },
      { dedupeWindowSeconds: 600, ttlSeconds: 3_600 },
    );
    const caller = identity();
    const t0 = Date.now();
    // Q, asked a second after H, expires at this; H's provider wait ends 20 s before Q's last look.
    const qExpiresAtS = expiresAtSOf(3_600, t0 + 1_000);
    const qLastLook = lastLookMs(qExpiresAtS);
    const holderEndsMs = qLastLook - 20_000;
    const holderWaitMs = holderEndsMs - t0;

    clockAt(t0);
    expect(await runtime.invoke(tool, caller, { idempotency_key: 'h', text: 'same' }, deadline())).toMatchObject({
      status: 'pending',
    });
    clockAt(t0 + 1_000);
    expect(await runtime.invoke(tool, caller, { idempotency_key: 'q', text: 'same' }, deadline())).toMatchObject({
      status: 'pending',
    });
    const keys = (await world.idempotencyRecordKeys(caller.tenant)).map((k) => k.id);
    const items = await Promise.all(keys.map((key) => callRecords(world, runtime).itemOf(key)));
    const q = items.find((item) => item.waited_on !== undefined)!;
    const h = items.find((item) => item !== q && item.attempt !== undefined)!;
    const itemOf = (key: unknown) => callRecords(world, runtime).itemOf(String(key));
    expect(Number(q.expiration)).toBe(qExpiresAtS);
    expect(h).toMatchObject({ in_progress_expiration: holderEndsMs });
    // A parked holder changes at its lock's end and no sooner (review 28, F2): Q is parked until then, as
    // before 40337c2 (attempt 1, due then), no wait look.
    expect(q).toMatchObject({ attempt: 1, in_progress_expiration: holderEndsMs });
    const parkedAgain = q;
    const completer = completerFor([tool]);

    // H's wait ends 20 s before Q's last look, and H's resend settles it at once.
    clockAt(holderEndsMs + 1_000);
    expect(await runtime.invoke(tool, caller, { idempotency_key: 'h', text: 'same' }, deadline())).toMatchObject({
      ok: true,
    });
    expect(await itemOf(h.id)).toMatchObject({ status: 'COMPLETED' });

    // Q's next look, when its record says (the stack's recheck, a dev pass): H settled 19 s before it. Due
    // less than a minute before its last look (LATEST_LOOK_AFTER_DUE_MS, cron's pace), it is given up, as its
    // answers said in advance — the same under every completer (review 27, F1; before 40337c2 it was parked
    // until H's lock end, due there: given up the same way now).
    const lookMs = completerLooksAtMs(scheduleOf(parkedAgain));
    clockAt(holderEndsMs + 2_000);
    const read = await readOperation({ runtime, toolNames: [tool.name] }, caller, tool.name, 'q');
    expect(read).toMatchObject({ status: 'abandoned', gives_up: 'expiring' });
    clockAt(lookMs + 2_000); // its lock's end, and the stack's recheck a whole second after it
    const outcome = await completer.onRecheck(
      { key: String(q.id), claim: String(parkedAgain.claim_id) },
      deadline(lockMs),
    );
    const after = await itemOf(q.id);
    expect({ outcome, status: after.status, stalled_reason: after.stalled_reason }).toEqual({
      outcome: 'gave_up',
      status: 'INPROGRESS',
      stalled_reason: 'expiring',
    });
    // What the answers told its caller to do: resend it. H's outcome answers it; nothing runs again. (8 s before
    // Q's last look, its 10 s lock ends past that look: its takeover gives Q up in advance, rule 2 — and answers.)
    const resent = await runtime.invoke(tool, caller, { idempotency_key: 'q', text: 'same' }, deadline());
    expect({ resent, runs }).toEqual({
      resent: expect.objectContaining({ ok: true, receipt: expect.objectContaining({ note_id: 'note_2' }) }),
      runs: 2,
    });
  });
});
