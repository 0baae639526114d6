import { parseArgs } from 'node:util';
import { crossCheckSchedule } from './cross-check';
import { type EngineName, type ExploreStore, engineNamed, startExploreStore } from './engine';
import { SCENARIOS } from './scenarios';
import { runSchedule, type ScheduleOptions, type ScheduleResult } from './schedule';
import type { Fault } from './scheduler';
import { createExploreWorld, type ExploreWorld } from './world';

/** The explorer's flags (`npm run explore -- --help` describes them; main.ts checks them first). */
export const EXPLORE_OPTIONS = {
  schedules: { type: 'string', default: '2000' },
  seed: { type: 'string' },
  scenario: { type: 'string' },
  at: { type: 'string' },
  endpoint: { type: 'string' },
  engine: { type: 'string', default: 'local' },
  'cross-check': { type: 'boolean', default: false },
  trace: { type: 'boolean', default: false },
  'stop-at-first': { type: 'boolean', default: false },
} as const;

/**
 * `npm run explore`: the deterministic explorer. For each scenario, first every scheduling point of
 * one schedule in turn gets a crash and a lost answer (systematic), then seeded random schedules (PCT
 * interleavings, random faults) until the budget is spent. A violation prints its seed and trace;
 * `--scenario S --seed N [--at STEP:FAULT]` replays that schedule exactly. `--engine memory` runs on
 * the in-memory model of DynamoDB; `--cross-check` runs every schedule on both and stops at the first
 * schedule they disagree on.
 */
export async function explore(argv: string[]): Promise<number> {
  const { values } = parseArgs({ args: argv, options: EXPLORE_OPTIONS });
  const crossCheck = values['cross-check'];
  const engines: EngineName[] = crossCheck ? ['local', 'memory'] : [engineNamed(values.engine)];
  const stores: ExploreStore[] = [];
  const worlds: ExploreWorld[] = [];
  const started = Date.now();
  const results: ScheduleResult[] = [];
  try {
    for (const engine of engines)
      stores.push(await startExploreStore(engine, engine === 'local' ? values.endpoint : undefined));
    // A fresh namespace (its own tables) every WORLD_SCHEDULES schedules: scans over ever larger tables
    // would make each schedule slower than the last.
    const freshWorlds = async () => {
      for (const world of worlds.splice(0)) world.destroy();
      for (const store of stores) worlds.push(await createExploreWorld(store.connection, { record: crossCheck }));
    };
    await freshWorlds();
    let worldSchedules = 0;
    const scenarios = values.scenario ? [values.scenario] : Object.keys(SCENARIOS);
    for (const name of scenarios)
      if (!SCENARIOS[name]) throw new Error(`no scenario ${name}; there are ${Object.keys(SCENARIOS).join(', ')}`);
    /** One schedule on every engine (the first's result is the explorer's); undefined: they disagreed (printed). */
    const run = async (options: ScheduleOptions): Promise<ScheduleResult | undefined> => {
      if (worldSchedules++ >= WORLD_SCHEDULES) {
        await freshWorlds();
        worldSchedules = 1;
      }
      if (!crossCheck) {
        const result = await runSchedule(worlds[0]!, options);
        checkModelled(stores);
        return result;
      }
      const { result, difference } = await crossCheckSchedule({ local: worlds[0]!, memory: worlds[1]! }, options);
      checkModelled(stores);
      if (!difference) return result;
      console.log(`cross-check: the engines differ on ${replayCommand(result)} --cross-check`);
      console.log(`  first difference, line ${difference.index} of the schedule's record:`);
      console.log(`  local:  ${difference.local}`);
      console.log(`  memory: ${difference.memory}`);
      return undefined;
    };
    if (values.seed !== undefined) {
      const result = await run({ scenario: scenarios[0]!, seed: Number(values.seed), ...parseAt(values.at) });
      if (!result) return 1;
      report([result], Date.now() - started, true, engines);
      return result.violations.length === 0 ? 0 : 1;
    }
    const budget = Number(values.schedules);
    const perScenario = Math.ceil(budget / scenarios.length);
    for (const [index, name] of scenarios.entries()) {
      for (const options of schedulesFor(name, index, perScenario)) {
        const result = await run(options.next(results.at(-1)));
        if (!result) return 1;
        // A passing schedule's trace and answers are dropped (the first one's kept for --trace): 100,000
        // schedules would otherwise hold ~10 KB each.
        const keep = result.violations.length > 0 || results.length === 0;
        results.push(keep ? result : { ...result, trace: [], answers: [] });
        if (result.violations.length > 0 && values['stop-at-first']) break;
      }
    }
    report(results, Date.now() - started, values.trace, engines);
    if (crossCheck) console.log(`cross-check: ${results.length} schedules compared on local and memory, 0 differences`);
    return results.some((result) => result.violations.length > 0) ? 1 : 0;
  } finally {
    for (const world of worlds) world.destroy();
    for (const store of stores) await store.stop();
  }
}

/** A request the in-memory engine could not answer as DynamoDB would: its verdicts would mean nothing. */
function checkModelled(stores: readonly ExploreStore[]): void {
  for (const store of stores) {
    if (store.unmodelled.length > 0) {
      throw new Error(`the ${store.engine} engine met requests it does not model:\n  ${store.unmodelled.join('\n  ')}`);
    }
  }
}

/** Schedules run in one namespace before the next gets fresh tables. */
const WORLD_SCHEDULES = Number(process.env.EXPLORE_WORLD_SCHEDULES ?? 100);

/**
 * A scenario's schedules: its base schedule (seeded, no faults), then a crash, a lost answer and a
 * transient failure at each of the base schedule's points in turn (systematic), then seeded random
 * schedules.
 */
function* schedulesFor(
  scenario: string,
  index: number,
  count: number,
): Generator<{ next(previous: ScheduleResult | undefined): ScheduleOptions }> {
  const baseSeed = 1_000_000 * (index + 1);
  let baseSteps = 0;
  yield { next: () => ({ scenario, seed: baseSeed, faultFree: true }) };
  const systematic: Array<Exclude<Fault, 'none'>> = ['crash', 'lose_answer', 'fail_before'];
  for (let slot = 0; slot < count - 1; slot++) {
    yield {
      next(previous) {
        if (slot === 0) baseSteps = previous?.steps ?? 0;
        if (slot < baseSteps * systematic.length) {
          const at = [{ step: Math.floor(slot / systematic.length), fault: systematic[slot % systematic.length]! }];
          return { scenario, seed: baseSeed, at };
        }
        return { scenario, seed: baseSeed + 1 + slot };
      },
    };
  }
}

/** A violation's kind: its invariant and the words before the first colon (and the code it answered). */
function kindOf(violation: string): string {
  const kind = violation
    .split(':')[0]!
    .replace(/\s*\(.*\)\s*/, ' ')
    .trim();
  const code = /→ (\w+)/.exec(violation)?.[1];
  return code ? `${kind} (${code})` : kind;
}

function replayCommand(result: ScheduleResult): string {
  const at = result.at ? ` --at ${result.at.map(({ step, fault }) => `${step}:${fault}`).join(',')}` : '';
  return `npm run explore -- --scenario ${result.scenario} --seed ${result.seed}${at}`;
}

function parseAt(at: string | undefined): Pick<ScheduleOptions, 'at'> {
  if (!at) return {};
  return {
    at: at.split(',').map((forced) => {
      const [step, fault] = forced.split(':');
      return { step: Number(step), fault: fault as Exclude<Fault, 'none'> };
    }),
  };
}

function report(
  results: ScheduleResult[],
  elapsedMs: number,
  withTrace: boolean,
  engines: readonly EngineName[],
): void {
  const failing = results.filter((result) => result.violations.length > 0);
  const byScenario = new Map<string, { schedules: number; steps: number; faults: number; failing: number }>();
  for (const result of results) {
    const row = byScenario.get(result.scenario) ?? { schedules: 0, steps: 0, faults: 0, failing: 0 };
    row.schedules += 1;
    row.steps += result.steps;
    row.faults += result.faults;
    if (result.violations.length > 0) row.failing += 1;
    byScenario.set(result.scenario, row);
  }
  console.log('scenario         schedules  steps   faults  failing');
  for (const [name, row] of byScenario) {
    console.log(
      `${name.padEnd(16)} ${String(row.schedules).padStart(9)} ${String(row.steps).padStart(6)} ${String(row.faults).padStart(8)} ${String(row.failing).padStart(8)}`,
    );
  }
  // Violations by kind (the invariant and its first words), with the first schedule that found each.
  const kinds = new Map<string, { count: number; first: ScheduleResult; index: number; text: string }>();
  const perScenario = new Map<string, number>();
  for (const result of results) {
    const index = (perScenario.get(result.scenario) ?? 0) + 1;
    perScenario.set(result.scenario, index);
    for (const violation of new Set(result.violations.map(kindOf))) {
      const key = `${violation} — ${result.scenario}`;
      const seen = kinds.get(key);
      if (seen) seen.count += 1;
      else
        kinds.set(key, {
          count: 1,
          first: result,
          index,
          text: result.violations.find((v) => kindOf(v) === violation)!,
        });
    }
  }
  for (const [kind, { count, first, index, text }] of kinds) {
    console.log(`\n${kind}: ${count} schedule(s); first: ${first.scenario} schedule #${index}`);
    console.log(`  ${text.slice(0, 300)}`);
    console.log(`  replay: ${replayCommand(first)}`);
  }
  if (withTrace || failing.length > 0) {
    const shown = failing[0] ?? results[0];
    if (shown && (withTrace || failing.length > 0)) {
      console.log(`\ntrace of ${replayCommand(shown)}:`);
      for (const line of shown.trace) {
        console.log(
          `  ${String(line.step).padStart(4)} +${String(line.at).padStart(7)}ms ${line.actor.padEnd(12)} ${line.request}${line.fault === 'none' ? '' : `  ← ${line.fault}`}`,
        );
      }
      for (const violation of shown.violations) console.log(`  ✗ ${violation}`);
    }
  }
  const rate = results.length / (elapsedMs / 1000);
  console.log(
    `\nexplore: ${results.length} schedules, ${failing.length} with violations, ${(elapsedMs / 1000).toFixed(1)} s ` +
      `(${rate.toFixed(1)} schedules/s on ${engines.join(' and ')})`,
  );
}
