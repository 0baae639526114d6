/** `npm run explore [-- --schedules N | --scenario S --seed N [--at STEP:FAULT]]`: see test/explore/explore.ts. */
import { applyLocalDefaults } from '../lib/local/local-env';
import { explore } from '../test/explore/explore';
import { commandFlags } from './cli-args';

const USAGE = `usage: npm run explore -- [--schedules N] [--scenario S --seed N [--at STEP:FAULT]] [--trace] [--endpoint URL]

The deterministic explorer: seeded schedules over every scenario, with crashes and lost answers at every
step, on DynamoDB Local; a violation prints its seed and trace and exits 1.

  --schedules N      how many schedules (default 2000)
  --scenario S       one scenario (with --seed: replay one schedule)
  --seed N           the schedule's seed
  --at STEP:FAULT    force a fault at a step of the replayed schedule
  --trace            print every step
  --endpoint URL     a DynamoDB to use instead of starting DynamoDB Local`;

// Checked here, so a bad flag is one line and --help the usage; explore() parses the same flags.
commandFlags(USAGE, {
  schedules: { type: 'string' },
  seed: { type: 'string' },
  scenario: { type: 'string' },
  at: { type: 'string' },
  endpoint: { type: 'string' },
  trace: { type: 'boolean' },
});
applyLocalDefaults(process.env, 'SILENT');
explore(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (error: unknown) => {
    console.error(error);
    process.exit(2);
  },
);
