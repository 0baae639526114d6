import type { Completer, Recheck } from '../../lib/idempotency';
import { COMPLETER_DEFAULTS } from '../../lib/infra/defaults';
import { completerPass } from '../../lib/local/completer-pass';
import { LocalRecheckQueue } from '../../lib/local/recheck-queue';
import type { LocalStreamFeed } from '../../lib/local/stream-feed';

/**
 * The local completer pass and its queue (npm start, `retrysafe dev`, `npm run complete`): a recheck
 * leaves the queue only when its handling ended. The completer here is a stand-in — what is under test is
 * which messages the pass deletes, not what a recheck does (test/integration/completer.test.ts).
 */
const noStream = { poll: async () => 0 } as unknown as LocalStreamFeed;
const deadline = { getRemainingTimeInMillis: () => 60_000 };

function clock() {
  let now = 1_000_000;
  return {
    now: () => now,
    advance(ms: number) {
      now += ms;
    },
  };
}

function completerThat(onRecheck: (recheck: Recheck) => Promise<string>) {
  return {
    onStream: async () => ({ rechecksScheduled: 0 }),
    onRecheck: onRecheck,
  } as unknown as Completer;
}

describe('completerPass', () => {
  it('deletes the rechecks it handled and leaves a failed one to come again when its visibility ends', async () => {
    const time = clock();
    const queue = new LocalRecheckQueue(time.now, { visibilitySeconds: 30 });
    await queue.send([
      { key: 'ok', claim: 'c', delaySeconds: 0 },
      { key: 'fails', claim: 'c', delaySeconds: 0 },
    ]);
    const seen: string[] = [];
    const completer = completerThat(async (recheck) => {
      seen.push(recheck.key);
      if (recheck.key === 'fails') throw new Error('throttled');
      return 'finished';
    });

    const first = await completerPass(completer, noStream, queue, deadline);
    const hidden = await completerPass(completer, noStream, queue, deadline);
    time.advance(30_000);
    const again = await completerPass(completer, noStream, queue, deadline);

    expect(first.rechecks.failedMessageIds).toHaveLength(1);
    expect(hidden.rechecks.failedMessageIds).toEqual([]);
    expect(again.rechecks.failedMessageIds).toHaveLength(1);
    expect(seen).toEqual(['ok', 'fails', 'fails']);
    expect(queue.size).toBe(1);
  });

  it('loses nothing when the pass itself never comes back (its worker died handling a recheck)', async () => {
    const time = clock();
    const queue = new LocalRecheckQueue(time.now, { visibilitySeconds: 30 });
    await queue.send([{ key: 'k', claim: 'c', delaySeconds: 0 }]);
    const dies = completerThat(() => new Promise<never>(() => {}));
    const works = completerThat(async () => 'finished');

    void completerPass(dies, noStream, queue, deadline);
    await new Promise((resolve) => setImmediate(resolve));
    time.advance(30_000);
    const next = await completerPass(works, noStream, queue, deadline);

    expect(next.rechecks.outcomes.finished).toBe(1);
    expect(queue.size).toBe(0);
  });

  it('moves a recheck to the dead letters after as many failed deliveries as the stack’s redrive policy allows', async () => {
    const time = clock();
    const queue = new LocalRecheckQueue(time.now); // the defaults
    await queue.send([{ key: 'poison', claim: 'c', delaySeconds: 0 }]);
    let deliveries = 0;
    const completer = completerThat(async () => {
      deliveries += 1;
      throw new Error('always');
    });

    for (let pass = 0; pass < COMPLETER_DEFAULTS.recheckMaxReceiveCount + 2; pass++) {
      await completerPass(completer, noStream, queue, deadline);
      time.advance(30_000);
    }

    expect(deliveries).toBe(COMPLETER_DEFAULTS.recheckMaxReceiveCount);
    expect(queue.deadLetters.map((recheck) => recheck.key)).toEqual(['poison']);
  });
});
