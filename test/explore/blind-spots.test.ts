import { runSchedule, type ScheduleOptions } from './schedule';
import { createExploreWorld, type ExploreWorld } from './world';

/**
 * The explorer's former blind spots (issue 24 part 3), each pinned by the schedules that decided it —
 * regressions.test.ts's way: a schedule that found a defect must hold after its fix, and one that
 * reached a state a decision allows must go on being allowed by the checks.
 */
const SCHEDULES: ReadonlyArray<readonly [what: string, schedule: ScheduleOptions]> = [
  [
    // Failed before the takeover's lock had to end the tolerated clock skew before the TTL: a retry whose
    // clock ran behind took an abandoned refund over with a lock ending at the TTL by its clock, moved the
    // money and committed; a worker whose clock ran ahead claimed the key anew while that lock still ran,
    // found the refund stamped by another call and answered idempotent: true; the first lost its claim —
    // nobody was told they executed.
    'a worker ahead claims the key anew while a takeover behind it still holds its lock (clock skew)',
    { scenario: 'clock_skew', seed: 1000144 },
  ],
  ['the same, the first refund made by a fresh key meanwhile (clock skew)', { scenario: 'clock_skew', seed: 1000005 }],
  [
    // Decision A: a pending answer is pollable until the TTL of the record it was about. Here a takeover
    // is refused 31 ms before the TTL (pending), and a clock step of 1 s passes the TTL before the poll:
    // the record is gone (rule 2) and not_found is right.
    'a pending near the TTL polled not_found once the TTL passed',
    { scenario: 'near_ttl', seed: 1000155 },
  ],
  [
    // Decision B: a refund abandoned after the money moved, its takeovers refused near the TTL, is half
    // done after the completer (which does not finish an expired record) until a resend — done at the end.
    'an abandoned refund half done past its TTL until a resend',
    { scenario: 'near_ttl', seed: 1000085 },
  ],
];

let world: ExploreWorld;

beforeAll(async () => {
  world = await createExploreWorld(process.env.DYNAMODB_ENDPOINT!);
});

afterAll(() => world.destroy());

describe('the explorer, on the schedules that decided its former blind spots', () => {
  it.each(SCHEDULES)('%s: no invariant is violated', async (_what, schedule) => {
    const result = await runSchedule(world, schedule);

    expect(result.violations).toEqual([]);
  });
});
