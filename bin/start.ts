/**
 * `npm start`: DynamoDB Local (in memory, or `--data DIR` on disk; none when DYNAMODB_ENDPOINT is set),
 * the tables, and the HTTP API on 127.0.0.1:${PORT:-3000}, served by the same handlers Lambda runs.
 */
import { parseArgs } from 'node:util';
import { createCompleter } from '../lib/admin/completer';
import { allowedHostNames, startLocalApi } from '../lib/local/api-server';
import { completerPass } from '../lib/local/completer-pass';
import { DevSigningKey } from '../lib/local/dev-auth';
import { startDynamoDBLocal } from '../lib/local/dynamodb-local';
import { freePort } from '../lib/local/free-port';
import { applyLocalDefaults } from '../lib/local/local-env';
import { LocalRecheckQueue } from '../lib/local/recheck-queue';
import { LocalStreamFeed } from '../lib/local/stream-feed';
import { createStreamsClient } from '../lib/local/streams-client';
import { createCompleterMetrics } from '../lib/observability/metrics';
import { createServices } from '../lib/services';
import { createTables } from '../lib/store/create-tables';
import { tableName } from '../lib/store/tables';
import { TOOLS } from '../lib/tools/registry';
import { createToolRuntime } from '../lib/tools/tool-runtime';

/** How long one local completer pass may take (its deadline, as a Lambda invocation's). */
const COMPLETER_PASS_MS = 10_000;

async function main(): Promise<void> {
  const { values } = parseArgs({ options: { data: { type: 'string' }, port: { type: 'string' } } });
  applyLocalDefaults(process.env, 'INFO');

  const dynamodb = process.env.DYNAMODB_ENDPOINT ? undefined : await startDynamoDBLocal({ dbPath: values.data });
  if (dynamodb) {
    // Its data lives under this run's random access key (or the data folder's): a peer on the network
    // reaching DynamoDB Local's port with any other key sees none of it.
    process.env.DYNAMODB_ENDPOINT = dynamodb.endpoint;
    process.env.AWS_ACCESS_KEY_ID = dynamodb.credentials.accessKeyId;
    process.env.AWS_SECRET_ACCESS_KEY = dynamodb.credentials.secretAccessKey;
    delete process.env.AWS_SESSION_TOKEN;
  }
  const services = createServices(process.env);
  await createTables(services.client);

  // The port is fixed before the server listens (`--port 0`: a free one), as the dev issuer is the
  // server's own URL on it — the URL `npm run token` with the same PORT mints for.
  const requested = Number(values.port ?? process.env.PORT ?? 3000);
  const port = requested === 0 ? await freePort() : requested;
  const key = await DevSigningKey.loadOrCreate({ ...process.env, PORT: String(port) });
  const runtime = createToolRuntime(services);
  const api = await startLocalApi({
    tools: TOOLS,
    services,
    runtime,
    verifyToken: (token) => key.verify(token),
    issuer: key.settings.issuer,
    port,
    // Names a tunnel or a proxy reaches the server by, besides the loopback ones.
    allowedHosts: allowedHostNames(process.env),
    // INVOCATION_TIMEOUT_MS shortens the per-request deadline (and so the lock) for fault runs.
    ...(process.env.INVOCATION_TIMEOUT_MS ? { timeoutMs: Number(process.env.INVOCATION_TIMEOUT_MS) } : {}),
  });

  let stopping = false;
  // The completer, fed as the stack feeds it — the table's stream, then the rechecks that are due — one
  // pass every COMPLETER_INTERVAL_SECONDS (default 5; the stack batches the stream for 10 s).
  const streams = createStreamsClient(process.env);
  const feed = new LocalStreamFeed(streams, tableName('idempotency', process.env));
  const queue = new LocalRecheckQueue();
  const completer = createCompleter({ services, runtime, tools: TOOLS, queue });
  const recordCompleter = createCompleterMetrics(process.env.POWERTOOLS_SERVICE_NAME || 'retrysafe');
  const intervalMs = Number(process.env.COMPLETER_INTERVAL_SECONDS || 5) * 1000;
  let nextPass: NodeJS.Timeout | undefined;
  async function runPass(): Promise<void> {
    try {
      const end = Date.now() + COMPLETER_PASS_MS;
      const report = await completerPass(
        completer,
        feed,
        queue,
        { getRemainingTimeInMillis: () => end - Date.now() },
        { logger: services.logger },
      );
      const { figures, rechecks } = report;
      const delivered = Object.values(rechecks.outcomes).reduce((sum, n) => sum + n, rechecks.failedMessageIds.length);
      // Locally only passes that scheduled, delivered or gave up on something are printed (the stack logs
      // every invocation).
      if (figures.rechecksScheduled + figures.gaveUp + delivered === 0) return;
      recordCompleter(figures);
      services.logger.info('completer pass', {
        recordsRead: report.recordsRead,
        ...rechecks.outcomes,
        ...figures,
        waiting: queue.size,
      });
    } catch (error) {
      services.logger.error('completer pass failed', { error: error as Error });
    } finally {
      // One pass at a time: the next is scheduled once this one ended.
      if (!stopping) nextPass = setTimeout(runPass, intervalMs);
    }
  }
  nextPass = setTimeout(runPass, intervalMs);

  async function stop(code: number): Promise<void> {
    if (stopping) return;
    stopping = true;
    clearTimeout(nextPass);
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
  if (dynamodb) {
    console.log(
      `  its data is under this access key; other tools reach it with\n  DYNAMODB_ENDPOINT=${dynamodb.endpoint} AWS_ACCESS_KEY_ID=${dynamodb.credentials.accessKeyId} npm run complete`,
    );
  }
  console.log(
    `\nMint a token (issuer ${key.settings.issuer}):\n  TOKEN=$(npm run -s token -- --tenant acme --user ada${port === 3000 ? '' : ` --port ${port}`})`,
  );
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
