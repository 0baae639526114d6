/**
 * The explorer as a test, for the mutation run (`npm run mutate`, jest.mutate.config.js): a fixed sample
 * of schedules over every scenario — each scenario's fault-free base schedule, a crash and a lost answer
 * at points of it, and seeded random ones — that fails on the first violation, so that a mutant the
 * explorer notices is counted killed. The same schedules every run (the seeds are fixed).
 */
import { DeleteTableCommand, ListTablesCommand } from '@aws-sdk/client-dynamodb';
import { SCENARIOS } from './scenarios';
import { runSchedule } from './schedule';
import { createExploreWorld, type ExploreWorld } from './world';

/** Schedules per scenario: small enough for a run per mutant, every scenario's faults included. */
const PER_SCENARIO = Number(process.env.MUTATE_EXPLORE_PER_SCENARIO ?? 8);

let world: ExploreWorld;
beforeAll(async () => {
  world = await createExploreWorld(process.env.DYNAMODB_ENDPOINT!);
});
afterAll(async () => {
  // The world's namespace is its own: its tables go with it, so a run per mutant does not pile them up.
  const { TableNames = [] } = await world.client.send(new ListTablesCommand({}));
  for (const name of TableNames) await world.client.send(new DeleteTableCommand({ TableName: name }));
  world.destroy();
});

describe('the explorer, a fixed sample of schedules', () => {
  // As `npm run explore` orders them: each scenario's seeds its own (its tenants are named after them).
  it.each(Object.keys(SCENARIOS).map((name, index) => [name, 1_000_000 * (index + 1)] as const))(
    '%s: no schedule reaches a state the state machine does not allow',
    async (scenario, baseSeed) => {
      const violations: string[] = [];
      const faults = ['crash', 'lose_answer', 'fail_before'] as const;
      for (let slot = 0; slot < PER_SCENARIO && violations.length === 0; slot++) {
        // The base schedule; then a crash, a lost answer and a transient failure at its first two points;
        // then seeded random schedules.
        const systematic = slot >= 1 && slot <= 6;
        const options = {
          scenario,
          seed: slot === 0 || systematic ? baseSeed : baseSeed + slot,
          ...(slot === 0 ? { faultFree: true } : {}),
          ...(systematic ? { at: [{ step: Math.floor((slot - 1) / 3), fault: faults[(slot - 1) % 3]! }] } : {}),
        };
        const result = await runSchedule(world, options);
        violations.push(...result.violations.map((violation) => `${JSON.stringify(options)}: ${violation}`));
      }
      expect(violations).toEqual([]);
    },
    20_000,
  );
});
