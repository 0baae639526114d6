/**
 * `npm run token -- --tenant T --user U [--ttl 1h]`: prints a token the local server accepts, and
 * nothing else on stdout.
 */
import { parseArgs } from 'node:util';
import { DevSigningKey } from '../lib/local/dev-auth';

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: { tenant: { type: 'string' }, user: { type: 'string' }, ttl: { type: 'string', default: '1h' } },
  });
  if (!values.tenant || !values.user) {
    console.error('usage: npm run token -- --tenant TENANT --user USER [--ttl 1h]');
    process.exit(2);
  }
  const key = await DevSigningKey.loadOrCreate();
  process.stdout.write(`${await key.mint(values.tenant, values.user, values.ttl)}\n`);
}

main().catch((error) => {
  console.error(error instanceof Error ? error.message : error);
  process.exit(1);
});
