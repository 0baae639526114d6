/**
 * `npm run token -- --tenant T --user U [--ttl 1h] [--port 3000]`: prints a token the local server on
 * that port (default `PORT`, else 3000) accepts, and nothing else on stdout. Its issuer is the server's
 * URL (or `JWT_ISSUER`), as `npm start` verifies it.
 */
import { parseArgs } from 'node:util';
import { DevSigningKey } from '../lib/local/dev-auth';

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      tenant: { type: 'string' },
      user: { type: 'string' },
      ttl: { type: 'string', default: '1h' },
      port: { type: 'string' },
    },
  });
  if (!values.tenant || !values.user) {
    console.error('usage: npm run token -- --tenant TENANT --user USER [--ttl 1h] [--port 3000]');
    process.exit(2);
  }
  const key = await DevSigningKey.loadOrCreate(values.port ? { ...process.env, PORT: values.port } : process.env);
  process.stdout.write(`${await key.mint(values.tenant, values.user, values.ttl)}\n`);
}

main().catch((error) => {
  console.error(error instanceof Error ? error.message : error);
  process.exit(1);
});
