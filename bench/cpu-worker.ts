/**
 * One Lambda-like process that holds several handlers' bundles and calls them in turn, one invocation
 * at a time, measuring each call's CPU (`process.cpuUsage`: every thread of the process) and wall time.
 * Bundled and run with plain `node` by `against-bare.ts`, in the environment Lambda would give it; the
 * samples go back on file descriptor 3 (stdout is the handlers' log, as on Lambda).
 */
import { writeSync } from 'node:fs';
import { Logger } from '@aws-lambda-powertools/logger';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { APIGatewayProxyEventV2WithJWTAuthorizer, Context } from 'aws-lambda';
import { apiEvent, lambdaContext, seedBenchInvoices, traceHeader } from './lambda-like';

export interface WorkerHandler {
  readonly label: string;
  /** The bundle (`index.js`) exporting `handler`. */
  readonly file: string;
  readonly transport: 'rest' | 'mcp';
  /** Sent as `authorization` (a function that verifies tokens itself). */
  readonly authorization?: string;
}

export interface WorkerConfig {
  readonly handlers: readonly WorkerHandler[];
  readonly tenant: string;
  readonly user: string;
  readonly warmup: number;
  readonly rounds: number;
  /** Also measure what writing one log line costs this process. */
  readonly probeLogLine: boolean;
}

/** CPU per log line (a Powertools Logger line like a call's), written one at a time as calls do. */
export interface LogLineCost {
  /** Median CPU of one Powertools Logger line. */
  readonly cpuUs: number;
  /** Median CPU of the same line written by hand: JSON.stringify and one write. */
  readonly byHandUs: number;
  readonly lines: number;
}

export interface CallSample {
  /** User and system CPU of the whole process during the call, in µs. */
  readonly cpuUs: number;
  readonly wallMs: number;
  /** The trace header the invocation ran under (the X-Ray daemon's documents name its root). */
  readonly trace: string;
}

export type WorkerResult = Record<string, { first: CallSample[]; replay: CallSample[] }>;

type Handler = (
  event: APIGatewayProxyEventV2WithJWTAuthorizer,
  context: Context,
) => Promise<{
  statusCode: number;
  headers?: Record<string, string>;
  body: string;
}>;

const AMOUNT = 1_000;

async function seedInvoices(config: WorkerConfig): Promise<void> {
  const client = new DynamoDBClient(process.env.DYNAMODB_ENDPOINT ? { endpoint: process.env.DYNAMODB_ENDPOINT } : {});
  await seedBenchInvoices(client, {
    tenant: config.tenant,
    labels: config.handlers.map(({ label }) => label),
    rounds: config.warmup + config.rounds,
    amount: AMOUNT,
  });
  client.destroy();
}

/** One invocation of `handler`: a refund of `invoice` under `key`, over REST or MCP. */
async function invoke(handler: WorkerHandler, run: Handler, config: WorkerConfig, invoice: string, key: string) {
  const args = { idempotency_key: key, invoice_id: invoice, amount: AMOUNT };
  const claims = { tenant_id: config.tenant, sub: config.user };
  const event =
    handler.transport === 'rest'
      ? apiEvent('/tools/refund', args, claims)
      : apiEvent(
          '/mcp',
          { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'refund', arguments: args } },
          claims,
          {
            accept: 'application/json, text/event-stream',
            'mcp-protocol-version': '2025-06-18',
            ...(handler.authorization ? { authorization: handler.authorization } : {}),
          },
        );
  const trace = traceHeader();
  process.env._X_AMZN_TRACE_ID = trace;
  const context = lambdaContext(handler.label, 10_000);
  const cpu = process.cpuUsage();
  const started = performance.now();
  const response = await run(event, context);
  const wallMs = performance.now() - started;
  const used = process.cpuUsage(cpu);
  if (response.statusCode !== 200 || /"isError":true|"error":/.test(response.body)) {
    throw new Error(`${handler.label}: unexpected answer ${response.statusCode} ${response.body.slice(0, 300)}`);
  }
  return { cpuUs: used.user + used.system, wallMs, trace };
}

/**
 * One log line at a time, with a pause before each (the log reader idle, as between calls): the median
 * CPU of one `logger.info`, formatting and write included; and, for comparison, of the same line written
 * by hand (`JSON.stringify` and one `process.stdout.write`), the cheapest a line can be.
 */
const LINES = 250;
const WARMUP_LINES = 50;

async function logLineCost(): Promise<LogLineCost> {
  const logger = new Logger({ serviceName: 'retrysafe' });
  const fields = { tool: 'refund', tenant: 'bench', outcome: 'executed', key_hash: '0123456789abcdef' };
  const medianCpu = async (write: () => void) => {
    const costs: number[] = [];
    for (let line = 0; line < LINES + WARMUP_LINES; line++) {
      await new Promise((resolve) => setTimeout(resolve, 2));
      const cpu = process.cpuUsage();
      write();
      const used = process.cpuUsage(cpu);
      if (line >= WARMUP_LINES) costs.push(used.user + used.system);
    }
    costs.sort((a, b) => a - b);
    return costs[Math.floor(costs.length / 2)]!;
  };
  const cpuUs = await medianCpu(() => logger.info('tool call', fields));
  const byHandUs = await medianCpu(() => {
    const line = {
      level: 'INFO',
      message: 'tool call',
      timestamp: new Date().toISOString(),
      service: 'retrysafe',
      sampling_rate: 0,
      xray_trace_id: process.env._X_AMZN_TRACE_ID,
      ...fields,
    };
    process.stdout.write(`${JSON.stringify(line)}\n`);
  });
  return { cpuUs, byHandUs, lines: LINES };
}

async function main(): Promise<void> {
  const config = JSON.parse(process.env.BENCH_WORKER ?? '{}') as WorkerConfig;
  const handlers = config.handlers.map((handler) => ({
    handler,
    // biome-ignore lint/suspicious/noExplicitAny: a bundle's exports, as the Lambda runtime loads them
    run: (require(handler.file) as any).handler as Handler,
  }));
  await seedInvoices(config);
  const result: WorkerResult = Object.fromEntries(
    config.handlers.map(({ label }) => [label, { first: [], replay: [] }]),
  );
  for (let round = 0; round < config.warmup + config.rounds; round++) {
    // Interleaved, each handler first in turn: drift in the machine's load falls on all of them.
    for (let turn = 0; turn < handlers.length; turn++) {
      const { handler, run } = handlers[(round + turn) % handlers.length]!;
      const invoice = `${handler.label}-${round}`;
      const first = await invoke(handler, run, config, invoice, `${invoice}-key`);
      const replay = await invoke(handler, run, config, invoice, `${invoice}-key`);
      if (round >= config.warmup) {
        result[handler.label]!.first.push(first);
        result[handler.label]!.replay.push(replay);
      }
    }
  }
  writeSync(3, JSON.stringify(config.probeLogLine ? { ...result, logLine: await logLineCost() } : result));
}

main().then(
  () => process.exit(0),
  (error) => {
    console.error(error);
    process.exit(1);
  },
);
