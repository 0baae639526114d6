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

    const before = queue.receive();
    clock.advance(5_000);
    const atFive = queue.receive();
    const again = queue.receive();
    for (const { receipt } of atFive) queue.delete(receipt);
    clock.advance(25_000);
    const atThirty = queue.receive();
    for (const { receipt } of atThirty) queue.delete(receipt);

    expect(before).toEqual([]);
    expect(atFive.map((delivery) => delivery.recheck.key)).toEqual(['soon']);
    expect(again).toEqual([]);
    expect(atThirty.map((delivery) => delivery.recheck)).toEqual([{ key: 'late', claim: 'c1', delaySeconds: 30 }]);
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

    expect(queue.receive().map((delivery) => delivery.recheck.key)).toEqual(['first', 'b', 'a', 'c']);
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

  it('delivers a received recheck again when its visibility ends unless it was deleted: a worker that died loses nothing', async () => {
    const clock = manualClock();
    const queue = new LocalRecheckQueue(clock.now, { visibilitySeconds: 360 });
    await queue.send([
      { key: 'handled', claim: 'c', delaySeconds: 0 },
      { key: 'lost-with-its-worker', claim: 'c', delaySeconds: 0 },
    ]);

    const first = queue.receive();
    queue.delete(first[0]!.receipt);
    const hidden = queue.receive();
    const hiddenUntil = queue.nextDueAt();
    clock.advance(360_000);
    const again = queue.receive();

    expect(first.map((delivery) => [delivery.recheck.key, delivery.receiveCount])).toEqual([
      ['handled', 1],
      ['lost-with-its-worker', 1],
    ]);
    expect(hidden).toEqual([]);
    expect(hiddenUntil).toBe(1_000_000 + 360_000);
    expect(again.map((delivery) => [delivery.recheck.key, delivery.receiveCount])).toEqual([
      ['lost-with-its-worker', 2],
    ]);
    expect(queue.size).toBe(1);
  });

  it('deletes a message only by its latest receipt, as SQS does for a message received again', async () => {
    const clock = manualClock();
    const queue = new LocalRecheckQueue(clock.now, { visibilitySeconds: 10 });
    await queue.send([{ key: 'k', claim: 'c', delaySeconds: 0 }]);
    const [stale] = queue.receive();
    clock.advance(10_000);
    const [latest] = queue.receive();

    const byStale = queue.delete(stale!.receipt);
    const byLatest = queue.delete(latest!.receipt);

    expect([byStale, byLatest]).toEqual([false, true]);
    expect(queue.size).toBe(0);
  });

  it('moves a recheck received maxReceiveCount times to the dead letters instead of a sixth delivery', async () => {
    const clock = manualClock();
    const queue = new LocalRecheckQueue(clock.now, { visibilitySeconds: 1, maxReceiveCount: 5 });
    await queue.send([{ key: 'poison', claim: 'c', delaySeconds: 0 }]);

    const counts: number[] = [];
    for (let round = 0; round < 6; round++) {
      counts.push(...queue.receive().map((delivery) => delivery.receiveCount));
      clock.advance(1_000);
    }

    expect(counts).toEqual([1, 2, 3, 4, 5]);
    expect(queue.deadLetters).toEqual([{ key: 'poison', claim: 'c', delaySeconds: 0 }]);
    expect(queue.size).toBe(0);
  });

  it('drops every message on purge, received or not', async () => {
    const queue = new LocalRecheckQueue(manualClock().now);
    await queue.send([
      { key: 'now', claim: 'c', delaySeconds: 0 },
      { key: 'later', claim: 'c', delaySeconds: 60 },
    ]);
    queue.receive();

    queue.purge();

    expect([queue.size, queue.nextDueAt()]).toEqual([0, undefined]);
  });
});
