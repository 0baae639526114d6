/**
 * `npm run complete`: one completer sweep against the DynamoDB that `DYNAMODB_ENDPOINT` names (a running
 * `npm start -- --data DIR`, say): finishes calls whose worker died, and prints what it found.
 */
import { createCompleter } from '../lib/admin/completer';
import { applyLocalDefaults } from '../lib/local/local-env';
import { createServices } from '../lib/services';
import { createStreamsClient } from '../lib/store/client';
import { TOOLS } from '../lib/tools/registry';
import { createToolRuntime } from '../lib/tools/tool-runtime';

async function main(): Promise<void> {
  applyLocalDefaults(process.env);
  if (!process.env.DYNAMODB_ENDPOINT) {
    console.error('set DYNAMODB_ENDPOINT to the DynamoDB to sweep (npm start prints it)');
    process.exitCode = 2;
    return;
  }
  const services = createServices(process.env);
  const streams = createStreamsClient(process.env);
  try {
    const completer = createCompleter({ services, runtime: createToolRuntime(services), tools: TOOLS, streams });
    const end = Date.now() + 60_000;
    const report = await completer.sweep({ getRemainingTimeInMillis: () => end - Date.now() });
    console.log(
      `completer: ${report.recordsRead} stream records read, ${report.abandonedFound} abandoned, ` +
        `${report.completedBySweep} completed, ${report.stillRunning} still running`,
    );
  } finally {
    services.client.destroy();
    streams.destroy();
  }
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
