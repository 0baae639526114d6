/**
 * Benchmark: DynamoDB requests and latency per kind of call, on DynamoDB Local.
 *
 *   npm run bench
 *
 * Prints, for each kind of call, the requests it sends (by command) and its median latency, and the
 * ratio of a replay's latency to a first execution's. Numbers from DynamoDB Local: absolute latencies
 * are not AWS latencies, request counts are exact.
 */
import { randomUUID } from 'node:crypto';
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { startDynamoDBLocal } from '../lib/local/dynamodb-local';
import { applyLocalDefaults } from '../lib/local/local-env';
import { createServices } from '../lib/services';
import { createTables } from '../lib/store/create-tables';
import { refund as refundTool } from '../lib/tools/refund';
import { createToolRuntime } from '../lib/tools/tool-runtime';

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 30);

function countRequests(client: DynamoDBClient): Map<string, number> {
  const counts = new Map<string, number>();
  client.middlewareStack.add(
    (next, context) => async (args) => {
      const command = context.commandName ?? 'unknown';
      counts.set(command, (counts.get(command) ?? 0) + 1);
      return next(args);
    },
    { step: 'initialize', name: 'benchRequestCounter' },
  );
  return counts;
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] ?? 0;

async function main(): Promise<void> {
  applyLocalDefaults(process.env, 'SILENT');
  const local = process.env.DYNAMODB_ENDPOINT ? undefined : await startDynamoDBLocal();
  if (local) process.env.DYNAMODB_ENDPOINT = local.endpoint;
  const services = createServices(process.env);
  const runtime = createToolRuntime(services);
  const refund = refundTool.bind(services);
  try {
    await createTables(services.client);
    const counts = countRequests(services.client);
    const deadline = () => {
      const end = Date.now() + 10_000;
      return { getRemainingTimeInMillis: () => end - Date.now() };
    };
    const kinds = [
      'first execution',
      'replay (same key)',
      'replay (new key, natural key)',
      'conflict (same key, other amount)',
    ];
    const samples = new Map<string, { ms: number[]; requests: Map<string, number> }>(
      kinds.map((kind) => [kind, { ms: [], requests: new Map() }]),
    );

    for (let round = 0; round < ROUNDS; round++) {
      const identity = { tenant: `bench-${randomUUID()}`, user: 'ada' };
      const invoice = {
        tenant: identity.tenant,
        invoice_id: 'inv_1',
        customer: 'c',
        amount: 1_000,
        currency: 'usd',
        created_at: new Date().toISOString(),
      };
      await services.invoices.create(invoice);
      const calls: Array<[string, Record<string, unknown>]> = [
        [kinds[0]!, { idempotency_key: 'k1', invoice_id: 'inv_1', amount: 1_000 }],
        [kinds[1]!, { idempotency_key: 'k1', invoice_id: 'inv_1', amount: 1_000 }],
        [kinds[2]!, { idempotency_key: 'k2', invoice_id: 'inv_1', amount: 1_000 }],
        [kinds[3]!, { idempotency_key: 'k1', invoice_id: 'inv_1', amount: 999 }],
      ];
      for (const [kind, input] of calls) {
        counts.clear();
        const started = process.hrtime.bigint();
        await runtime.invoke(refund, identity, input, deadline());
        const sample = samples.get(kind)!;
        sample.ms.push(Number(process.hrtime.bigint() - started) / 1e6);
        for (const [command, n] of counts) sample.requests.set(command, (sample.requests.get(command) ?? 0) + n);
      }
    }

    console.log(`refund on DynamoDB Local, ${ROUNDS} rounds (requests per call, median latency)`);
    for (const [kind, { ms, requests }] of samples) {
      const perCall = [...requests].map(([command, n]) => `${command.replace('Command', '')} ${n / ROUNDS}`).join(', ');
      const total = [...requests.values()].reduce((a, b) => a + b, 0) / ROUNDS;
      console.log(
        `  ${kind.padEnd(36)} ${String(total).padStart(4)} requests  (${perCall})  ${median(ms).toFixed(1)} ms`,
      );
    }
    const first = median(samples.get(kinds[0]!)!.ms);
    console.log(`  replay / first execution latency: ${(median(samples.get(kinds[1]!)!.ms) / first).toFixed(2)}`);
  } finally {
    services.client.destroy();
    await local?.stop();
  }
}

main().catch((error) => {
  console.error(error);
  process.exitCode = 1;
});
