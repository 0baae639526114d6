/**
 * retrysafe next to a bare Powertools handler, on DynamoDB Local, in a Lambda-like environment: each
 * entry point is bundled exactly as the stack bundles it and runs under plain `node` — the Node.js major
 * the stack deploys (`options.node`, see deployed-node.ts), not necessarily the bench's own — with the
 * environment Lambda and the stack give it (a fake X-Ray daemon receives what the X-Ray SDK sends).
 *
 *  - cold module init: a fresh process per sample requires the bundle, as Lambda's init does; the entry
 *    points are interleaved sample by sample, so drift in the machine's load falls on all of them;
 *  - CPU and wall time per call: one process holds several handlers and calls them in turn, one
 *    invocation at a time (a first call, then the replay of the same key). A configuration that changes
 *    the whole process (the X-Ray SDK's async hook) gets its own process; such processes alternate.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { createSocket } from 'node:dgram';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { build } from 'esbuild';
import { EXTERNAL_MODULES } from '../app/stack';
import { LAMBDA_RUNTIME, stackEsbuildOptions } from '../lib/infra/defaults';
import { DevSigningKey } from '../lib/local/dev-auth';
import { editsPlugin, type SourceEdit } from './ablation';
import type { LogLineCost, WorkerConfig, WorkerHandler, WorkerResult } from './cpu-worker';
import type { DeployedNode } from './deployed-node';
import { lambdaEnvironment } from './lambda-like';

const ROOT = join(__dirname, '..');

/** One entry point to measure: its source, how it is called, and what its process runs with. */
export interface Entry {
  readonly label: string;
  readonly source: string;
  readonly transport: 'rest' | 'mcp';
  /** The environment the stack gives the function (tracing, NODE_OPTIONS, …). */
  readonly environment: Readonly<Record<string, string>>;
  /** Where its external packages resolve (the project it belongs to). @default this project */
  readonly nodeModules?: string;
  /** Source edits applied while bundling (a feature taken out: ablation.ts). */
  readonly edits?: readonly SourceEdit[];
}

/** Handlers called in turn in one process, whose environment is the first handler's. */
export interface WorkerRun {
  readonly name: string;
  readonly labels: readonly string[];
  /** Rounds for this run (each handler: a first call and its replay per round). @default options.rounds */
  readonly rounds?: number;
}

export interface AgainstBareOptions {
  /** The Node.js binary every Lambda-like process runs on. */
  readonly node: DeployedNode;
  readonly entries: readonly Entry[];
  /** Entries whose cold module init is measured. */
  readonly initLabels: readonly string[];
  readonly workers: readonly WorkerRun[];
  /** DynamoDB Local's endpoint and the credentials its tables are under. */
  readonly store: Readonly<Record<string, string>>;
  readonly initSamples: number;
  readonly warmup: number;
  /** Rounds per worker, split over `passes` alternating runs. */
  readonly rounds: number;
  readonly passes: number;
}

/** Medians of one kind of call: CPU (user + system of the whole process) in µs, wall time in ms. */
export interface CallFigures {
  readonly cpuUs: number;
  readonly wallMs: number;
  readonly samples: number;
  /** Every call's CPU in µs, in call order: the handlers of one run were called in turn, round by round. */
  readonly cpuUsEach: readonly number[];
}

export interface AgainstBareReport {
  /** The Node.js version(s) the cold-start processes reported running on. */
  readonly node: string;
  /** Per entry: median module init (ms: requiring the bundle in a fresh process) and bundle size. */
  readonly init: Record<string, { moduleMs: number; processMs: number; samples: number; bytes: number }>;
  /** Per worker run, per handler: a first call and its replay. */
  readonly calls: Record<string, Record<string, { first: CallFigures; replay: CallFigures }>>;
  /** Per worker run, per handler: X-Ray documents the fake daemon received per first call, by name. */
  readonly traces: Record<string, Record<string, Record<string, number>>>;
  /** What writing one log line costs in the first worker's process (its stdout is a pipe, as on Lambda). */
  readonly logLine: LogLineCost;
}

export const median = (values: number[]) =>
  [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] ?? Number.NaN;

/** Bundles `entry` as the stack does (BUNDLING, a linked source map without sources content). */
export async function bundle(entry: string, outfile: string, edits: readonly SourceEdit[] = []): Promise<number> {
  const result = await build({
    entryPoints: [entry],
    outfile,
    ...stackEsbuildOptions(EXTERNAL_MODULES),
    plugins: edits.length > 0 ? [editsPlugin(edits)] : [],
    sourcemap: true,
    sourcesContent: false,
    logLevel: 'silent',
    metafile: true,
  });
  const js = Object.keys(result.metafile.outputs).find((file) => file.endsWith('.js'))!;
  return result.metafile.outputs[js]!.bytes;
}

/** Runs the `node` binary with `args` and `env`; resolves with what it wrote on file descriptor 3. */
export function runNode(node: string, args: string[], env: NodeJS.ProcessEnv): Promise<string> {
  return new Promise((resolve, reject) => {
    const child: ChildProcess = spawn(node, args, { env, stdio: ['ignore', 'pipe', 'pipe', 'pipe'] });
    let stderr = '';
    let out = '';
    child.stdout!.resume(); // the handlers' log lines, drained as Lambda's runtime drains them
    child.stderr!.on('data', (chunk: Buffer) => {
      stderr = (stderr + chunk.toString()).slice(-4_000);
    });
    (child.stdio[3] as NodeJS.ReadableStream).on('data', (chunk: Buffer) => {
      out += chunk.toString();
    });
    child.on('error', reject);
    child.on('close', (code) =>
      code === 0 ? resolve(out) : reject(new Error(`node ${args.at(-1)}: exit ${code}\n${stderr}`)),
    );
  });
}

/**
 * Requires the bundle named on the command line, as Lambda's init does, and reports how long it took: wall
 * time (`module`, ms) and the process's CPU time meanwhile (`moduleCpu`, ms: less moved by a busy machine).
 */
export const INIT_PROBE = [
  "const { performance } = require('node:perf_hooks');",
  'const cpuBefore = process.cpuUsage();',
  'const started = performance.now();',
  'require(process.argv[1]);',
  'const ended = performance.now();',
  'const cpu = process.cpuUsage(cpuBefore);',
  "require('node:fs').writeSync(3, JSON.stringify({ module: ended - started, moduleCpu: (cpu.user + cpu.system) / 1000, process: ended, node: process.versions.node }));",
].join('\n');

/** An X-Ray daemon that only counts: documents received per trace root, by name. */
async function fakeXrayDaemon() {
  const socket = createSocket('udp4');
  const byTrace = new Map<string, Map<string, number>>();
  socket.on('message', (message) => {
    try {
      const document = JSON.parse(message.toString().split('\n').slice(1).join('\n')) as {
        trace_id?: string;
        name?: string;
        namespace?: string;
      };
      const names = byTrace.get(document.trace_id ?? '') ?? new Map<string, number>();
      const name = `${document.namespace ? `${document.namespace}:` : ''}${document.name}`;
      names.set(name, (names.get(name) ?? 0) + 1);
      byTrace.set(document.trace_id ?? '', names);
    } catch {
      // not a segment document
    }
  });
  await new Promise<void>((resolve) => socket.bind(0, '127.0.0.1', resolve));
  return { port: socket.address().port, byTrace, close: () => socket.close() };
}

/** Serves a JWKS for the MCP function (it verifies tokens itself), and mints its bearer token. */
async function jwksIssuer(keyDir: string) {
  let jwks = '';
  const server = createServer((_request, response) => {
    response.writeHead(200, { 'content-type': 'application/json' }).end(jwks);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  const issuer = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`;
  const key = await DevSigningKey.loadOrCreate({ DEV_KEY_DIR: keyDir, JWT_ISSUER: issuer, JWT_AUDIENCE: 'retrysafe' });
  jwks = JSON.stringify({ keys: [key.publicJwk()] });
  return { issuer, jwksUrl: `${issuer}/jwks.json`, key, close: () => server.close() };
}

export async function benchAgainstBare(options: AgainstBareOptions): Promise<AgainstBareReport> {
  const outDir = mkdtempSync(join(tmpdir(), 'retrysafe-bench-'));
  const daemon = await fakeXrayDaemon();
  const issuer = await jwksIssuer(join(outDir, 'keys'));
  const byLabel = new Map(options.entries.map((entry) => [entry.label, entry]));
  const entry = (label: string) => byLabel.get(label) ?? fail(`no entry ${label}`);
  try {
    const files = new Map<string, { file: string; bytes: number }>();
    for (const { label, source, edits } of options.entries) {
      const file = join(outDir, label, 'index.js');
      files.set(label, { file, bytes: await bundle(source, file, edits) });
    }
    const worker = join(outDir, 'worker', 'index.js');
    await bundle(join(__dirname, 'cpu-worker.ts'), worker);
    const fileOf = (label: string) => files.get(label)!.file;

    const environmentOf = (label: string, functionName: string, taskRoot: string, extra: Record<string, string> = {}) =>
      lambdaEnvironment({
        functionName,
        runtime: LAMBDA_RUNTIME.name,
        taskRoot,
        nodePath: entry(label).nodeModules ?? join(ROOT, 'node_modules'),
        xrayDaemonPort: daemon.port,
        functionEnvironment: {
          ...entry(label).environment,
          JWT_ISSUER: issuer.issuer,
          JWT_AUDIENCE: 'retrysafe',
          JWKS_URL: issuer.jwksUrl,
        },
        extra: { ...options.store, ...extra },
      });

    // Cold module init: a fresh process per sample, the entries interleaved.
    const init = new Map(
      options.initLabels.map((label) => [label, { module: [] as number[], process: [] as number[] }]),
    );
    const versions = new Set<string>();
    for (let sample = 0; sample < options.initSamples; sample++) {
      for (let turn = 0; turn < options.initLabels.length; turn++) {
        const label = options.initLabels[(sample + turn) % options.initLabels.length]!;
        const out = await runNode(
          options.node.path,
          ['-e', INIT_PROBE, fileOf(label)],
          environmentOf(label, label, dirname(fileOf(label))),
        );
        const measured = JSON.parse(out) as { module: number; process: number; node: string };
        versions.add(measured.node);
        init.get(label)!.module.push(measured.module);
        init.get(label)!.process.push(measured.process);
      }
    }

    // CPU and wall time per call, each worker run in its own process, the runs alternating.
    const user = 'ada';
    const samples = new Map<string, WorkerResult>();
    let logLine: LogLineCost | undefined;
    for (let pass = 0; pass < options.passes; pass++) {
      for (const run of options.workers) {
        // A tenant per process, its invoices and keys its own; the MCP function reads it from the token.
        const tenant = `bench-${run.name}-${pass}-${Date.now()}`;
        const token = `Bearer ${await issuer.key.mint(tenant, user)}`;
        const handlers: WorkerHandler[] = run.labels.map((label) => ({
          label,
          file: fileOf(label),
          transport: entry(label).transport,
          ...(entry(label).transport === 'mcp' ? { authorization: token } : {}),
        }));
        const config: WorkerConfig = {
          handlers,
          tenant,
          user,
          warmup: options.warmup,
          rounds: Math.ceil((run.rounds ?? options.rounds) / options.passes),
          probeLogLine: logLine === undefined,
        };
        const { logLine: measuredLine, ...result } = JSON.parse(
          await runNode(
            options.node.path,
            [worker],
            environmentOf(run.labels[0]!, run.name, dirname(worker), { BENCH_WORKER: JSON.stringify(config) }),
          ),
        ) as { logLine?: LogLineCost } & WorkerResult;
        logLine ??= measuredLine as LogLineCost | undefined;
        const pooled = samples.get(run.name) ?? {};
        for (const [label, { first, replay }] of Object.entries(result as WorkerResult)) {
          pooled[label] ??= { first: [], replay: [] };
          pooled[label].first.push(...first);
          pooled[label].replay.push(...replay);
        }
        samples.set(run.name, pooled);
      }
    }
    // Let the last datagrams arrive.
    await new Promise((resolve) => setTimeout(resolve, 300));

    const calls: AgainstBareReport['calls'] = {};
    const traces: AgainstBareReport['traces'] = {};
    for (const [run, byHandler] of samples) {
      calls[run] = {};
      traces[run] = {};
      for (const [label, { first, replay }] of Object.entries(byHandler)) {
        const summary = (taken: typeof first): CallFigures => ({
          cpuUs: median(taken.map((s) => s.cpuUs)),
          wallMs: median(taken.map((s) => s.wallMs)),
          samples: taken.length,
          cpuUsEach: taken.map((s) => s.cpuUs),
        });
        calls[run][label] = { first: summary(first), replay: summary(replay) };
        const names: Record<string, number> = {};
        for (const sample of first) {
          const root = /Root=([^;]+)/.exec(sample.trace)?.[1] ?? '';
          for (const [name, count] of daemon.byTrace.get(root) ?? []) names[name] = (names[name] ?? 0) + count;
        }
        traces[run][label] = Object.fromEntries(
          Object.entries(names).map(([name, count]) => [name, count / first.length]),
        );
      }
    }
    return {
      node: versions.size > 0 ? [...versions].join(', ') : options.node.version,
      init: Object.fromEntries(
        [...init].map(([label, measured]) => [
          label,
          {
            moduleMs: median(measured.module),
            processMs: median(measured.process),
            samples: measured.module.length,
            bytes: files.get(label)!.bytes,
          },
        ]),
      ),
      calls,
      traces,
      logLine: logLine ?? { cpuUs: Number.NaN, byHandUs: Number.NaN, lines: 0 },
    };
  } finally {
    daemon.close();
    issuer.close();
    rmSync(outDir, { recursive: true, force: true });
  }
}

function fail(message: string): never {
  throw new Error(message);
}
