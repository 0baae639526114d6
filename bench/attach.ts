/**
 * Attach, measured: `PAIRS` concurrent duplicate pairs against a tool of known latency — the first call
 * runs it, its duplicate arrives while it runs (an agent's retry after a lost answer) and retries each
 * `pending` after its `retry_after_ms` — with attach on (the default cap) and off (`maxWaitMs: 0`).
 * Prints, per latency: the agent's round trips per intent (the first call's and its duplicate's), the
 * duplicate's GetItems and PutItems (counted by its own client's middleware), and the Lambda time its
 * invocations took (billed: the attach wait included), in ms and GB-s at the stack's 512 MB.
 *
 *   npm run bench:attach            (or as part of `npm run bench`)
 *   BENCH_ATTACH_PAIRS (10)
 */
import { randomUUID } from 'node:crypto';
import * as z from 'zod/mini';
import { tableName } from '../app/tables';
import { DEFAULT_ATTACH_MAX_WAIT_MS, ToolRuntime, type ToolRuntimeOptions } from '../lib/idempotency';
import { defineTool } from '../lib/idempotency/definition';
import { DEFAULT_RECORD_ATTRIBUTES } from '../lib/idempotency/protocol/record';
import type { ToolResult } from '../lib/idempotency/types';
import { FUNCTION_DEFAULTS } from '../lib/infra/defaults';
import { createDynamoDBClient } from '../lib/store/client';

const PAIRS = Number(process.env.BENCH_ATTACH_PAIRS ?? 10);
/** Tool latencies: a quick write, a typical payment, one that outlasts the cap. */
const LATENCIES_MS = [100, 500, 3_000];

/** What one duplicate cost, summed over its round trips. */
interface DuplicateCost {
  trips: number;
  lambdaMs: number;
  answeredAfterMs: number;
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

function deadline(ms = 10_000) {
  const end = Date.now() + ms;
  return { getRemainingTimeInMillis: () => end - Date.now() };
}

/** A runtime on a client of its own, counting the requests it sends by command. */
function meteredRuntime(env: NodeJS.ProcessEnv, attach: ToolRuntimeOptions['attach']) {
  const client = createDynamoDBClient(env);
  const requests = new Map<string, number>();
  client.middlewareStack.add(
    (next, context) =>
      async function countRequest(args) {
        const command = String(context.commandName).replace(/Command$/, '');
        requests.set(command, (requests.get(command) ?? 0) + 1);
        return next(args);
      },
    { step: 'initialize', name: 'benchAttachMeter' },
  );
  const runtime = new ToolRuntime({
    client,
    tableName: tableName('idempotency', env),
    attributes: DEFAULT_RECORD_ATTRIBUTES,
    ...(attach ? { attach } : {}),
  });
  return { runtime, requests, destroy: () => client.destroy() };
}

/** Runs every latency with attach on and off, and prints one line each. */
export async function benchAttach(env: NodeJS.ProcessEnv = process.env): Promise<void> {
  const started = new Map<string, () => void>();
  const latency = { ms: 0 };
  const tool = defineTool({
    name: 'bench_note',
    description: 'Bench: a write of known latency.',
    args: z.strictObject({ text: z.string() }),
    annotations: { destructiveHint: false, openWorldHint: false },
    async execute(args, context) {
      started.get(context.identity.tenant)?.();
      await sleep(latency.ms);
      return { receipt: { note_id: `note_${randomUUID()}`, text: args.text }, replayed: false };
    },
  });
  const first = meteredRuntime(env, { maxWaitMs: 0 });
  const gbPerMs = FUNCTION_DEFAULTS.memorySize / 1024 / 1000;
  console.log(
    `attach (DynamoDB Local, ${PAIRS} concurrent duplicate pairs per line; the duplicate arrives while the first runs and retries each pending after its retry_after_ms; cap ${DEFAULT_ATTACH_MAX_WAIT_MS} ms)`,
  );
  try {
    // Warm up (DynamoDB Local's JVM, the clients' connections): the first round is not printed.
    latency.ms = LATENCIES_MS[0]!;
    const warm = meteredRuntime(env, {});
    await Promise.all(Array.from({ length: PAIRS }, () => pair(first.runtime, warm.runtime, tool, started)));
    warm.destroy();
    for (const ms of LATENCIES_MS) {
      latency.ms = ms;
      for (const on of [false, true]) {
        const duplicate = meteredRuntime(env, on ? {} : { maxWaitMs: 0 });
        const costs = await Promise.all(
          Array.from({ length: PAIRS }, () => pair(first.runtime, duplicate.runtime, tool, started)),
        );
        duplicate.destroy();
        const mean = (pick: (cost: DuplicateCost) => number) => costs.reduce((sum, c) => sum + pick(c), 0) / PAIRS;
        const per = (command: string) => (duplicate.requests.get(command) ?? 0) / PAIRS;
        const lambdaMs = mean((c) => c.lambdaMs);
        console.log(
          `  tool ${String(ms).padStart(5)} ms, attach ${on ? 'on ' : 'off'}: agent round trips per intent ${(1 + mean((c) => c.trips)).toFixed(1)}` +
            ` (duplicate ${mean((c) => c.trips).toFixed(1)}); per duplicate: GetItem ${per('GetItem').toFixed(1)}, PutItem ${per('PutItem').toFixed(1)},` +
            ` UpdateItem ${per('UpdateItem').toFixed(1)}; Lambda time ${lambdaMs.toFixed(0)} ms (${(lambdaMs * gbPerMs).toFixed(3)} GB-s at ${FUNCTION_DEFAULTS.memorySize} MB);` +
            ` answered after ${mean((c) => c.answeredAfterMs).toFixed(0)} ms`,
        );
      }
    }
  } finally {
    first.destroy();
  }
}

/** One intent: the first call, and its duplicate sent once the tool runs, retried while pending. */
async function pair(
  first: ToolRuntime,
  duplicate: ToolRuntime,
  tool: Parameters<ToolRuntime['invoke']>[0],
  started: Map<string, () => void>,
): Promise<DuplicateCost> {
  const caller = { tenant: `bench-attach-${randomUUID()}`, user: 'ada' };
  const input = { idempotency_key: 'k1', text: 'hi' };
  const running = new Promise<void>((resolve) => started.set(caller.tenant, resolve));
  const firstCall = first.invoke(tool, caller, input, deadline());
  await running;
  const cost: DuplicateCost = { trips: 0, lambdaMs: 0, answeredAfterMs: 0 };
  const asked = Date.now();
  for (;;) {
    cost.trips += 1;
    const sent = Date.now();
    const result: ToolResult = await duplicate.invoke(tool, caller, input, deadline());
    cost.lambdaMs += Date.now() - sent;
    if (result.ok || !('status' in result)) break;
    await sleep(result.retry_after_ms);
  }
  cost.answeredAfterMs = Date.now() - asked;
  await firstCall;
  started.delete(caller.tenant);
  return cost;
}
