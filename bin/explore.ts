/** `npm run explore [-- --schedules N | --scenario S --seed N [--at STEP:FAULT]]`: see test/explore/explore.ts. */
import { applyLocalDefaults } from '../lib/local/local-env';
import { explore } from '../test/explore/explore';

applyLocalDefaults(process.env, 'SILENT');
explore(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (error: unknown) => {
    console.error(error);
    process.exit(2);
  },
);
