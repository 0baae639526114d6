/**
 * `npm start`: DynamoDB Local (in memory, or `--data DIR` on disk; none when DYNAMODB_ENDPOINT is set),
 * the tables, and the HTTP API on 127.0.0.1:${PORT:-3000}, served by the same handlers Lambda runs.
 */
import { parseArgs } from 'node:util';
import { createCompleter } from '../lib/admin/completer';
import { startLocalApi } from '../lib/local/api-server';
import { DevSigningKey } from '../lib/local/dev-auth';
import { startDynamoDBLocal } from '../lib/local/dynamodb-local';
import { applyLocalDefaults } from '../lib/local/local-env';
import { createSweepMetrics } from '../lib/observability/metrics';
import { createServices } from '../lib/services';
import { createStreamsClient } from '../lib/store/client';
import { createTables } from '../lib/store/create-tables';
import { TOOLS } from '../lib/tools/registry';
import { createToolRuntime } from '../lib/tools/tool-runtime';

async function main(): Promise<void> {
  const { values } = parseArgs({ options: { data: { type: 'string' }, port: { type: 'string' } } });
  applyLocalDefaults(process.env, 'INFO');

  const dynamodb = process.env.DYNAMODB_ENDPOINT ? undefined : await startDynamoDBLocal({ dbPath: values.data });
  if (dynamodb) process.env.DYNAMODB_ENDPOINT = dynamodb.endpoint;
  const services = createServices(process.env);
  await createTables(services.client);

  const key = await DevSigningKey.loadOrCreate();
  const runtime = createToolRuntime(services);
  const api = await startLocalApi({
    tools: TOOLS,
    services,
    runtime,
    verifyToken: (token) => key.verify(token),
    issuer: key.settings.issuer,
    port: Number(values.port ?? process.env.PORT ?? 3000),
    // INVOCATION_TIMEOUT_MS shortens the per-request deadline (and so the lock) for fault runs.
    ...(process.env.INVOCATION_TIMEOUT_MS ? { timeoutMs: Number(process.env.INVOCATION_TIMEOUT_MS) } : {}),
  });

  // The completer, as the stack runs it every minute: here every COMPLETER_INTERVAL_SECONDS (default 15).
  const streams = createStreamsClient(process.env);
  const completer = createCompleter({ services, runtime, tools: TOOLS, streams });
  const recordSweep = createSweepMetrics(process.env.POWERTOOLS_SERVICE_NAME || 'retrysafe');
  let sweepInFlight = false;
  const sweeping = setInterval(
    function sweep() {
      if (sweepInFlight) return; // one sweep at a time, as the stack's reserved concurrency of 1 ensures
      sweepInFlight = true;
      const end = Date.now() + 10_000;
      completer
        .sweep({ getRemainingTimeInMillis: () => end - Date.now() })
        .then((report) => {
          // Locally only sweeps that found something are printed (the stack records every sweep).
          if (report.abandonedFound === 0) return;
          recordSweep(report);
          services.logger.info('completer sweep', { ...report });
        })
        .catch((error: unknown) => services.logger.error('completer sweep failed', { error: error as Error }))
        .finally(() => {
          sweepInFlight = false;
        });
    },
    Number(process.env.COMPLETER_INTERVAL_SECONDS || 15) * 1000,
  );

  let stopping = false;
  async function stop(code: number): Promise<void> {
    if (stopping) return;
    stopping = true;
    clearInterval(sweeping);
    streams.destroy();
    await api.close().catch(() => undefined);
    services.client.destroy();
    await dynamodb?.stop();
    process.exit(code);
  }
  process.on('SIGINT', () => void stop(0));
  process.on('SIGTERM', () => void stop(0));
  // A reader of our output that went away (a closed pipe) must not turn every log line into a crash.
  for (const stream of [process.stdout, process.stderr]) stream.on('error', () => undefined);
  process.on('uncaughtException', (error) => {
    if (stopping) return;
    console.error(error);
    void stop(1);
  });

  console.log(`retrysafe local API: ${api.url}`);
  console.log(
    `DynamoDB: ${process.env.DYNAMODB_ENDPOINT}${dynamodb ? (values.data ? ` (DynamoDB Local, data in ${values.data})` : ' (DynamoDB Local, in memory)') : ''}`,
  );
  console.log('\nMint a token:\n  TOKEN=$(npm run -s token -- --tenant acme --user ada)');
  console.log(
    `\nTry it:\n  curl -s ${api.url}/tools/create_invoice -H "Authorization: Bearer $TOKEN" \\\n` +
      `    -H 'content-type: application/json' -d '{"idempotency_key":"k1","customer":"cus_ada","amount":4200}'`,
  );
  console.log('\nCtrl-C stops the server and DynamoDB Local.');
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
