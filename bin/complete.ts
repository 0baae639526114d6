/**
 * `npm run complete`: the completer, once, against the DynamoDB that `DYNAMODB_ENDPOINT` names (a running
 * `npm start -- --data DIR`, say): the idempotency table's stream read from its trim horizon into the
 * completer, as the stack's event source mapping feeds it, then the rechecks that schedules, delivered
 * as they come due — those due within a few seconds; a recheck waiting on a live lock is counted, not
 * waited for (run it again once the lock ended). Prints what it did.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { createCompleter } from '../lib/admin/completer';
import { type CompleterPassReport, completerPass } from '../lib/local/completer-pass';
import { applyLocalDefaults } from '../lib/local/local-env';
import { LocalRecheckQueue } from '../lib/local/recheck-queue';
import { LocalStreamFeed } from '../lib/local/stream-feed';
import { createStreamsClient } from '../lib/local/streams-client';
import { createServices } from '../lib/services';
import { tableName } from '../lib/store/tables';
import { TOOLS } from '../lib/tools/registry';
import { createToolRuntime } from '../lib/tools/tool-runtime';

/** The whole run's deadline, as one completer invocation's (the stack's timeout). */
const RUN_MS = 60_000;
/** Rechecks due within this long are waited for (an abandoned call's first one is due within a second). */
const WAIT_FOR_DUE_MS = 5_000;

async function main(): Promise<void> {
  applyLocalDefaults(process.env);
  if (!process.env.DYNAMODB_ENDPOINT) {
    console.error('set DYNAMODB_ENDPOINT to the DynamoDB to complete calls in (npm start prints it)');
    process.exitCode = 2;
    return;
  }
  const services = createServices(process.env);
  const streams = createStreamsClient(process.env);
  try {
    const feed = new LocalStreamFeed(streams, tableName('idempotency', process.env));
    const queue = new LocalRecheckQueue();
    const completer = createCompleter({ services, runtime: createToolRuntime(services), tools: TOOLS, queue });
    const end = Date.now() + RUN_MS;
    const deadline = { getRemainingTimeInMillis: () => end - Date.now() };
    const waitUntil = Date.now() + WAIT_FOR_DUE_MS;
    const passes: CompleterPassReport[] = [await completerPass(completer, feed, queue, deadline)];
    for (let next = queue.nextDueAt(); next !== undefined && next <= waitUntil; next = queue.nextDueAt()) {
      await sleep(Math.max(0, next - Date.now()));
      passes.push(await completerPass(completer, feed, queue, deadline));
    }
    const total = (count: (pass: CompleterPassReport) => number) => passes.reduce((sum, pass) => sum + count(pass), 0);
    console.log(
      `completer: ${total((pass) => pass.recordsRead)} stream records read, ` +
        `${total((pass) => pass.figures.rechecksScheduled)} rechecks scheduled; ` +
        `${total((pass) => pass.rechecks.outcomes.finished)} calls finished, ` +
        `${total((pass) => pass.rechecks.outcomes.settled)} already settled, ` +
        `${total((pass) => pass.rechecks.failedMessageIds.length)} rechecks failed, ` +
        `${total((pass) => pass.gaveUp)} given up; ` +
        `${queue.size} rechecks still waiting (a live lock, or a failed recheck): run it again later`,
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
