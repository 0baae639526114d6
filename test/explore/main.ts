/** `npm run explore [-- --schedules N | --scenario S --seed N [--at STEP:FAULT]] [--engine E | --cross-check]`: see explore.ts. */
import { TABLES } from '../../app/tables';
import { commandFlags } from '../../bin/cli-args';
import { applyLocalDefaults } from '../../lib/local/local-env';
import { EXPLORE_OPTIONS, explore } from './explore';

const USAGE = `usage: npm run explore -- [--schedules N] [--scenario S [--seed N [--at STEP:FAULT]]] [--trace]
                          [--stop-at-first] [--endpoint URL] [--engine local|memory] [--cross-check]

The deterministic explorer: seeded schedules over every scenario, with crashes and lost answers at every
step, on DynamoDB Local (or its in-memory model); a violation prints its seed and trace and exits 1.

  --schedules N      how many schedules, over all the scenarios run (default 2000)
  --scenario S       only this scenario's schedules (with --seed: replay one schedule)
  --seed N           replay the schedule of this seed (its trace printed)
  --at STEP:FAULT    the replayed schedule's faults, each at its step (STEP:FAULT,STEP:FAULT…)
  --trace            print a schedule's trace even when none fails
  --stop-at-first    stop a scenario's schedules at its first violation
  --endpoint URL     a DynamoDB to use instead of starting DynamoDB Local
  --engine E         local: DynamoDB Local, CI's truth (default); memory: the in-memory model of the
                     operations retrysafe sends (test/explore/engine/), many times faster
  --cross-check      every schedule on both engines: exit 1 at the first request, answer or table item
                     they differ on`;

// Checked here first, so that a bad flag is one line and --help the usage; explore() parses the same ones.
commandFlags(USAGE, EXPLORE_OPTIONS);
applyLocalDefaults(process.env, 'SILENT', TABLES);
explore(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (error: unknown) => {
    console.error(error);
    process.exit(2);
  },
);
