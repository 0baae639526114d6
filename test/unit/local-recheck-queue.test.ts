import { LocalRecheckQueue } from '../../lib/local/recheck-queue';

/** A clock the test moves by hand. */
function manualClock(start = 1_000_000) {
  let now = start;
  return {
    now: () => now,
    advance(ms: number) {
      now += ms;
    },
  };
}

describe('LocalRecheckQueue', () => {
  it('hands out nothing before its delay, then each recheck once, earliest first', async () => {
    const clock = manualClock();
    const queue = new LocalRecheckQueue(clock.now);
    await queue.send([
      { key: 'late', claim: 'c1', delaySeconds: 30 },
      { key: 'soon', claim: 'c2', delaySeconds: 5 },
    ]);

    const before = queue.due();
    clock.advance(5_000);
    const atFive = queue.due();
    const again = queue.due();
    clock.advance(25_000);
    const atThirty = queue.due();

    expect(before).toEqual([]);
    expect(atFive.map((recheck) => recheck.key)).toEqual(['soon']);
    expect(again).toEqual([]);
    expect(atThirty).toEqual([{ key: 'late', claim: 'c1', delaySeconds: 30 }]);
    expect(queue.size).toBe(0);
  });

  it('orders rechecks due together by due time, then by the order they were sent', async () => {
    const clock = manualClock();
    const queue = new LocalRecheckQueue(clock.now);
    await queue.send([
      { key: 'b', claim: 'c', delaySeconds: 10 },
      { key: 'a', claim: 'c', delaySeconds: 10 },
    ]);
    clock.advance(2_000);
    await queue.send([{ key: 'first', claim: 'c', delaySeconds: 0 }]);
    await queue.send([{ key: 'c', claim: 'c', delaySeconds: 8 }]); // due at 10 s too, sent last

    clock.advance(60_000);

    expect(queue.due().map((recheck) => recheck.key)).toEqual(['first', 'b', 'a', 'c']);
  });

  it('says when the next recheck is due and how many wait, on its own clock', async () => {
    const clock = manualClock(5_000);
    const queue = new LocalRecheckQueue(clock.now);
    const empty = queue.nextDueAt();
    await queue.send([
      { key: 'k1', claim: 'c', delaySeconds: 900 },
      { key: 'k2', claim: 'c', delaySeconds: 1 },
    ]);

    expect(empty).toBeUndefined();
    expect(queue.nextDueAt()).toBe(6_000);
    expect(queue.size).toBe(2);
  });

  it.each([
    ['over SQS’s 15 minutes', 901],
    ['negative', -1],
    ['a fraction of a second', 1.5],
  ])('refuses a delay SQS would refuse: %s', async (_label, delaySeconds) => {
    const queue = new LocalRecheckQueue(manualClock().now);

    await expect(queue.send([{ key: 'k', claim: 'c', delaySeconds }])).rejects.toThrow(/delaySeconds/);
    expect(queue.size).toBe(0);
  });
});
