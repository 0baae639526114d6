/**
 * Where the time goes: retrysafe's refund entry next to the bare Powertools handler (bench/bare-refund.ts),
 * profiled part by part, on DynamoDB Local, in the bench's Lambda-like environment (bench/lambda-like.ts).
 *
 *   npm run bench:profile
 *
 *  1. CPU per first call and per replay, by part: each handler in a process of its own (its own
 *     AsyncLocalStorage hooks, as deployed), V8's sampling profiler (node:inspector) running only while
 *     the measured calls run — the first calls of PROFILE_ROUNDS keys, then their replays. Each sample is
 *     charged to the module that owns it: the nearest frame, leaf upward, in a bundled source (mapped back
 *     through the bundle's source map) or an external package; a stdout write under the Logger is the
 *     Logger's, a socket read of the SDK's response is node:net; a promise hook of AsyncLocalStorage is
 *     node:async_hooks. Processes alternate, PROFILE_PASSES passes. Figures are µs of the main thread per
 *     call; the process's CPU per call (all threads, as the bench's) is printed beside them.
 *  2. Cold module init by module: a fresh process per sample requires the bundle as deployed (minified)
 *     with the profiler on for the require only, samples charged the same way, PROFILE_INIT_SAMPLES
 *     processes per entry, interleaved; with each module's bytes in the bundle (esbuild's metafile).
 *
 * The CPU bundles are the deployed ones unminified (function names readable); init uses the deployed
 * minified bundles. PROFILE_ROUNDS (300, split over the passes), PROFILE_PASSES (2), PROFILE_INIT_SAMPLES (8), PROFILE_INTERVAL_US (200),
 * PROFILE_ABLATE (a label of bench/ablation.ts: the refund profiled with that feature taken out).
 *
 * Every profiled process runs on the Node.js major the stack deploys (`LAMBDA_RUNTIME`, Node 24), as the
 * bench's do: `BENCH_NODE` chooses the binary the same way (bench/deployed-node.ts; `BENCH_NODE=current`
 * profiles on this machine's Node, e.g. Node 20 and its AsyncLocalStorage promise hooks). This driver stays on
 * the machine's Node. The stack's defaults (aws-cdk-lib) and the binary's choice are imported in the driver
 * only, so the bundled worker does not load them.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { Session } from 'node:inspector';
import { SourceMap } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { APIGatewayProxyEventV2WithJWTAuthorizer, Context } from 'aws-lambda';
import {
  apiEvent,
  deployedTableNames,
  lambdaContext,
  lambdaEnvironment,
  seedBenchInvoices,
  traceHeader,
} from './lambda-like';

const ROOT = process.env.PROFILE_ROOT ?? resolve(__dirname, '..');
const ROUNDS = Number(process.env.PROFILE_ROUNDS ?? 300);
const PASSES = Number(process.env.PROFILE_PASSES ?? 2);
const INIT_SAMPLES = Number(process.env.PROFILE_INIT_SAMPLES ?? 8);
const INTERVAL_US = Number(process.env.PROFILE_INTERVAL_US ?? 200);
const WARMUP = 30;
const AMOUNT = 1_000;

// ---------------------------------------------------------------------------------------------------
// V8 CPU profiles, charged to modules
// ---------------------------------------------------------------------------------------------------

interface CallFrame {
  functionName: string;
  url: string;
  lineNumber: number;
  columnNumber: number;
}
interface ProfileNode {
  id: number;
  callFrame: CallFrame;
  parent?: number;
  children?: number[];
}
interface Profile {
  nodes: ProfileNode[];
  startTime: number;
  endTime: number;
  samples: number[];
  timeDeltas: number[];
}

/** µs per owner (module or part) and per function, summed over profiles. */
export interface Charged {
  byModule: Map<string, number>;
  byFunction: Map<string, number>;
  totalUs: number;
}

const emptyCharged = (): Charged => ({ byModule: new Map(), byFunction: new Map(), totalUs: 0 });

/** The module of an absolute file: its package under node_modules, else its path in this repository. */
function moduleOfPath(path: string): string {
  const at = path.lastIndexOf('/node_modules/');
  if (at !== -1) {
    const [first, second] = path.slice(at + '/node_modules/'.length).split('/');
    return first!.startsWith('@') ? `${first}/${second}` : first!;
  }
  if (path.endsWith('/worker/index.js')) return '(bench driver: event, profiler start/stop)';
  if (path.endsWith('/index.js') && relative(ROOT, path).startsWith('..')) return '(bundle: top level, unmapped)';
  return relative(ROOT, path);
}

/** Source maps of the bundles, by the bundle's path. */
const maps = new Map<string, SourceMap | null>();
function sourceMapOf(file: string): SourceMap | null {
  if (!maps.has(file)) {
    try {
      maps.set(file, new SourceMap(JSON.parse(readFileSync(`${file}.map`, 'utf8'))));
    } catch {
      maps.set(file, null);
    }
  }
  return maps.get(file)!;
}

interface Frame {
  /** A file's module, 'node:<module>', or '' for V8 builtins and pseudo-frames. */
  module: string;
  name: string;
  where: string;
}

function frameOf({ functionName, url, lineNumber, columnNumber }: CallFrame): Frame {
  const name = functionName || '(anonymous)';
  if (url.startsWith('node:')) {
    const path = url.slice('node:'.length).replace(/^internal\//, '');
    return { module: `node:${path.split('/')[0]}`, name, where: url };
  }
  if (!url.startsWith('file://') && !url.startsWith('/')) return { module: '', name, where: url };
  const file = url.startsWith('file://') ? fileURLToPath(url) : url;
  const map = file.includes('/node_modules/') ? null : sourceMapOf(file);
  const entry = map?.findEntry(lineNumber, columnNumber) as
    | { originalSource?: string; originalLine?: number; name?: string }
    | undefined;
  if (entry?.originalSource) {
    const source = entry.originalSource.startsWith('file://')
      ? fileURLToPath(entry.originalSource)
      : resolve(dirname(file), entry.originalSource);
    const module = moduleOfPath(source);
    return {
      module,
      name: entry.name && functionName.length <= 2 ? entry.name : name,
      where: `${relative(ROOT, source).replace(/^node_modules\//, '')}:${(entry.originalLine ?? 0) + 1}`,
    };
  }
  return { module: moduleOfPath(file), name, where: `${relative(ROOT, file)}:${lineNumber + 1}` };
}

/** Node's own modules that own their samples wherever they are called from. */
const STICKY = new Set(['node:async_hooks', 'node:async_local_storage', 'node:modules']);

/**
 * Charges each sample of `profile` to its owner: walking from the leaf up, the first frame in a file
 * (bundled or external) — builtins and Node's own frames on the way are its work — unless a sticky Node
 * module comes first (AsyncLocalStorage's promise hooks, module loading). With no file frame at all, the
 * leaf's Node module or V8's pseudo-frame ((garbage collector), (program)).
 */
function charge(profile: Profile, into: Charged): void {
  const nodes = new Map(profile.nodes.map((node) => [node.id, node]));
  const parents = new Map<number, number>();
  for (const node of profile.nodes) for (const child of node.children ?? []) parents.set(child, node.id);
  const frames = new Map<number, Frame>();
  const frame = (id: number) => {
    let cached = frames.get(id);
    if (!cached) {
      cached = frameOf(nodes.get(id)!.callFrame);
      frames.set(id, cached);
    }
    return cached;
  };
  const owners = new Map<number, { module: string; fn: string }>();
  const ownerOf = (leaf: number) => {
    const cached = owners.get(leaf);
    if (cached) return cached;
    let firstNode: Frame | undefined;
    let found: { module: string; fn: string } | undefined;
    for (let id: number | undefined = leaf; id !== undefined; id = parents.get(id)) {
      const f = frame(id);
      if (f.module.startsWith('node:')) {
        if (STICKY.has(f.module)) {
          found = {
            module:
              f.module === 'node:modules'
                ? 'node:modules (loading, compiling)'
                : 'node:async_hooks (AsyncLocalStorage)',
            fn: `${f.name} ${f.where}`,
          };
          break;
        }
        firstNode ??= f;
      } else if (f.module !== '') {
        found = { module: f.module, fn: `${f.name} ${f.where}` };
        break;
      }
    }
    if (!found) {
      const leafFrame = frame(leaf);
      found = firstNode
        ? { module: firstNode.module, fn: `${firstNode.name} ${firstNode.where}` }
        : { module: leafFrame.name, fn: leafFrame.name };
    }
    owners.set(leaf, found);
    return found;
  };
  for (let i = 0; i < profile.samples.length; i++) {
    const us = profile.timeDeltas[i + 1] ?? 0;
    const leaf = profile.samples[i]!;
    if (nodes.get(leaf)!.callFrame.functionName === '(idle)') continue;
    const { module, fn } = ownerOf(leaf);
    into.byModule.set(module, (into.byModule.get(module) ?? 0) + us);
    into.byFunction.set(`${module}|${fn}`, (into.byFunction.get(`${module}|${fn}`) ?? 0) + us);
    into.totalUs += us;
  }
}

// ---------------------------------------------------------------------------------------------------
// Worker: one handler in a Lambda-like process; first calls, then their replays, each phase profiled
// ---------------------------------------------------------------------------------------------------

interface WorkerConfig {
  handlers: { label: string; file: string }[];
  tenant: string;
  rounds: number;
  out: string;
}

type Handler = (
  event: APIGatewayProxyEventV2WithJWTAuthorizer,
  context: Context,
) => Promise<{ statusCode: number; body: string }>;

interface PlainCharged {
  byModule: [string, number][];
  byFunction: [string, number][];
  totalUs: number;
}

interface Measured {
  first: Charged;
  replay: Charged;
  calls: number;
  /** Process CPU (user + system, all threads) summed over the calls, µs. */
  processUs: { first: number; replay: number };
}

/**
 * The handlers in one process, called in turn as the bench's cpu-worker does (a first call, then its
 * replay; each handler first in turn), the profiler on for each measured call only: drift in the machine's
 * load falls on all of them, and each call's samples are its handler's.
 */
async function worker(config: WorkerConfig): Promise<void> {
  const handlers = config.handlers.map(({ label, file }) => ({
    label,
    run: (require(file) as { handler: Handler }).handler,
  }));
  const client = new DynamoDBClient({ endpoint: process.env.DYNAMODB_ENDPOINT! });
  await seedBenchInvoices(client, {
    tenant: config.tenant,
    labels: handlers.map(({ label }) => label),
    rounds: WARMUP + config.rounds,
    amount: AMOUNT,
  });
  client.destroy();
  const session = new Session();
  session.connect();
  session.post('Profiler.enable');
  session.post('Profiler.setSamplingInterval', { interval: INTERVAL_US });
  const invoke = async (label: string, run: Handler, round: number, into?: Measured, phase?: 'first' | 'replay') => {
    const args = { idempotency_key: `${label}-${round}-key`, invoice_id: `${label}-${round}`, amount: AMOUNT };
    const event = apiEvent('/tools/refund', args, { tenant_id: config.tenant, sub: 'ada' });
    process.env._X_AMZN_TRACE_ID = traceHeader();
    const context = lambdaContext(label, 10_000);
    if (into) session.post('Profiler.start');
    const cpu = process.cpuUsage();
    const response = await run(event, context);
    const used = process.cpuUsage(cpu);
    if (into && phase) {
      let profile: Profile | undefined;
      session.post('Profiler.stop', (error, result) => {
        if (!error) profile = (result as { profile: Profile }).profile;
      });
      charge(profile!, into[phase]);
      into.processUs[phase] += used.user + used.system;
    }
    if (response.statusCode !== 200 || /"error":/.test(response.body)) {
      throw new Error(`${label}: ${response.statusCode} ${response.body.slice(0, 300)}`);
    }
  };
  const result: Record<string, Measured> = Object.fromEntries(
    handlers.map(({ label }) => [
      label,
      { first: emptyCharged(), replay: emptyCharged(), calls: 0, processUs: { first: 0, replay: 0 } },
    ]),
  );
  for (let round = 0; round < WARMUP + config.rounds; round++) {
    for (let turn = 0; turn < handlers.length; turn++) {
      const { label, run } = handlers[(round + turn) % handlers.length]!;
      const measured = round >= WARMUP ? result[label] : undefined;
      await invoke(label, run, round, measured, 'first');
      await invoke(label, run, round, measured, 'replay');
      if (measured) measured.calls += 1;
    }
  }
  session.disconnect();
  const plain = (charged: Charged) => ({
    byModule: [...charged.byModule],
    byFunction: [...charged.byFunction],
    totalUs: charged.totalUs,
  });
  writeFileSync(
    config.out,
    JSON.stringify(
      Object.fromEntries(
        Object.entries(result).map(([label, m]) => [label, { ...m, first: plain(m.first), replay: plain(m.replay) }]),
      ),
    ),
  );
}

/** Requires the bundle with the profiler on for the require only; writes the profile and its duration. */
const INIT_PROBE = `
const { Session } = require('node:inspector');
const { writeFileSync } = require('node:fs');
const session = new Session();
session.connect();
session.post('Profiler.enable');
session.post('Profiler.setSamplingInterval', { interval: Number(process.env.PROFILE_INTERVAL_US) });
session.post('Profiler.start');
const started = performance.now();
require(process.argv[1]);
const ms = performance.now() - started;
session.post('Profiler.stop', (error, result) => {
  writeFileSync(process.argv[2], JSON.stringify({ ms, profile: result.profile }));
  process.exit(0);
});`;

// ---------------------------------------------------------------------------------------------------
// Driver
// ---------------------------------------------------------------------------------------------------

async function bundle(entry: string, outfile: string, minify: boolean, ablate?: string) {
  const { build } = await import('esbuild');
  const { stackEsbuildOptions } = await import('../lib/infra/defaults');
  const { EXTERNAL_MODULES } = await import('../app/stack');
  const { ABLATIONS, ALL_OUT, editsPlugin } = await import('./ablation');
  const ablation = [...ABLATIONS, ALL_OUT].find(({ label }) => label === ablate);
  if (ablate && !ablation) throw new Error(`PROFILE_ABLATE: no ablation ${ablate} (bench/ablation.ts)`);
  const result = await build({
    entryPoints: [entry],
    outfile,
    ...stackEsbuildOptions(EXTERNAL_MODULES),
    plugins: ablation ? [editsPlugin(ablation.edits, ROOT)] : [],
    minify,
    sourcemap: true,
    sourcesContent: false,
    logLevel: 'silent',
    metafile: true,
  });
  const output = Object.entries(result.metafile.outputs).find(([file]) => file.endsWith('.js'))![1];
  const bytes = new Map<string, number>();
  for (const [input, { bytesInOutput }] of Object.entries(output.inputs)) {
    const module = moduleOfPath(resolve(input));
    bytes.set(module, (bytes.get(module) ?? 0) + bytesInOutput);
  }
  return { bytes, total: output.bytes };
}

/** Runs the `node` binary with `args` and `env`. */
function runNode(node: string, args: string[], env: NodeJS.ProcessEnv): Promise<void> {
  return new Promise((ok, fail) => {
    const child = spawn(node, args, { env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stderr = '';
    child.stdout.resume(); // the handlers' log lines, drained as Lambda's runtime drains them
    child.stderr.on('data', (chunk: Buffer) => {
      stderr = (stderr + chunk.toString()).slice(-4_000);
    });
    child.on('error', fail);
    child.on('close', (code) =>
      code === 0 ? ok() : fail(new Error(`node ${args.join(' ')}: exit ${code}\n${stderr}`)),
    );
  });
}

const ENTRIES = [
  { label: 'refund', source: join(ROOT, 'lambdas/refund.ts') },
  { label: 'bare_refund', source: join(__dirname, 'bare-refund.ts') },
] as const;

/** Coarse parts, for the summary: a module → the part of the call it belongs to. */
function partOf(module: string): string {
  if (module === 'zod') return 'zod (identity + arguments)';
  if (/^@aws-lambda-powertools\/(logger|metrics)$/.test(module))
    return "the call's log line (Logger + Metrics EMF, stdout)";
  if (module.startsWith('@aws-lambda-powertools/')) return 'Powertools idempotency, jmespath, commons';
  if (module.startsWith('@aws-sdk/') || module.startsWith('@smithy/') || module.startsWith('@aws-crypto/'))
    return 'AWS SDK (DynamoDB requests)';
  if (/^node:(net|http|_http|stream|streams|tls|dns|timers|process|events|buffer|url)/.test(module))
    return 'Node I/O, timers, events (callbacks with no JS caller)';
  if (module.startsWith('node:async_hooks'))
    return 'AsyncLocalStorage (Node 20: promise hooks; Node 24: AsyncContextFrame)';
  if (module === '(garbage collector)') return 'garbage collector';
  if (
    module === 'canonicalize' ||
    module.startsWith('lib/') ||
    module.startsWith('lambdas/') ||
    module.startsWith('bench/')
  )
    return "retrysafe's own code (bare: its handler + InvoiceStore, ledger)";
  if (module.startsWith('(bench driver')) return module;
  if (module === '(program)') return '(program): V8 / native, unattributed';
  return 'other';
}

const fmt = (us: number) => `${Math.round(us).toLocaleString('en')}`;
const signed = (us: number) => `${us >= 0 ? '+' : '−'}${fmt(Math.abs(us))}`;

function table(header: string[], rows: string[][]): void {
  const widths = header.map((title, column) => Math.max(title.length, ...rows.map((cells) => cells[column]!.length)));
  const line = (cells: string[]) =>
    `  ${cells.map((cell, column) => (column === 0 ? cell.padEnd(widths[column]!) : cell.padStart(widths[column]!))).join('  ')}`;
  console.log(line(header));
  for (const cells of rows) console.log(line(cells));
}

/** Rows of `ours` vs `bare` (µs totals, divided by `per`), grouped by `group`, largest difference first. */
function compare(ours: Charged, bare: Charged, per: [number, number], group: (module: string) => string, top = 40) {
  const sum = (charged: Charged) => {
    const out = new Map<string, number>();
    for (const [module, us] of charged.byModule) out.set(group(module), (out.get(group(module)) ?? 0) + us);
    return out;
  };
  const a = sum(ours);
  const b = sum(bare);
  const keys = [...new Set([...a.keys(), ...b.keys()])];
  return keys
    .map((key) => {
      const x = (a.get(key) ?? 0) / per[0];
      const y = (b.get(key) ?? 0) / per[1];
      return { key, x, y, d: x - y };
    })
    .sort((p, q) => Math.abs(q.d) - Math.abs(p.d))
    .slice(0, top);
}

const USAGE = `usage: npm run bench:profile

Where the time goes: retrysafe's refund entry next to the bare Powertools handler, profiled part by part
on DynamoDB Local — CPU per first call and per replay by module, then cold module init by module. No
flags: PROFILE_ROUNDS (300), PROFILE_PASSES (2), PROFILE_INIT_SAMPLES (8), PROFILE_INTERVAL_US (200),
PROFILE_ABLATE (a label of bench/ablation.ts) and BENCH_NODE (bench/deployed-node.ts) set it.`;

async function main(): Promise<void> {
  // Imported here, as the driver's other modules are: the bundled worker does not load it.
  const { commandFlags } = await import('../bin/cli-args');
  commandFlags(USAGE, {});
  const { startDynamoDBLocal } = await import('../lib/local/dynamodb-local');
  const { createTables } = await import('../lib/store/create-tables');
  const { applyLocalDefaults } = await import('../lib/local/local-env');
  const { BUNDLING, DEFAULT_TRACING_DEPTH, FUNCTION_DEFAULTS, LAMBDA_RUNTIME, tracingEnvironment } = await import(
    '../lib/infra/defaults'
  );
  const { describeDeployedNode, resolveDeployedNode } = await import('./deployed-node');
  // First: a missing Node binary fails at once, before DynamoDB Local starts.
  const node = resolveDeployedNode();
  console.log(describeDeployedNode(node));
  applyLocalDefaults(process.env, 'SILENT', (await import('../app/tables')).TABLES);
  const local = process.env.DYNAMODB_ENDPOINT ? undefined : await startDynamoDBLocal();
  const store = {
    DYNAMODB_ENDPOINT: local?.endpoint ?? process.env.DYNAMODB_ENDPOINT!,
    AWS_ACCESS_KEY_ID: local?.credentials.accessKeyId ?? process.env.AWS_ACCESS_KEY_ID!,
    AWS_SECRET_ACCESS_KEY: local?.credentials.secretAccessKey ?? process.env.AWS_SECRET_ACCESS_KEY!,
  };
  const outDir = mkdtempSync(join(tmpdir(), 'retrysafe-profile-'));
  try {
    const client = new DynamoDBClient({
      endpoint: store.DYNAMODB_ENDPOINT,
      region: 'us-east-1',
      credentials: { accessKeyId: store.AWS_ACCESS_KEY_ID, secretAccessKey: store.AWS_SECRET_ACCESS_KEY },
    });
    const { TABLES } = await import('../app/tables');
    await createTables(client, TABLES);
    client.destroy();

    const deployed = {
      ...deployedTableNames(),
      POWERTOOLS_SERVICE_NAME: FUNCTION_DEFAULTS.serviceName,
      ...tracingEnvironment(DEFAULT_TRACING_DEPTH),
    };
    const environment = (label: string, file: string, extra: Record<string, string> = {}) =>
      lambdaEnvironment({
        functionName: label,
        runtime: LAMBDA_RUNTIME.name,
        taskRoot: dirname(file),
        nodePath: join(ROOT, 'node_modules'),
        xrayDaemonPort: 2000, // tracing as deployed (invocations): nothing is sent
        functionEnvironment: deployed,
        extra: { ...store, PROFILE_INTERVAL_US: String(INTERVAL_US), PROFILE_ROOT: ROOT, ...extra },
      });
    const files = new Map<string, { cpu: string; init: string; bytes: Map<string, number>; total: number }>();
    for (const { label, source } of ENTRIES) {
      const cpu = join(outDir, `${label}-cpu`, 'index.js');
      const init = join(outDir, `${label}-init`, 'index.js');
      // PROFILE_ABLATE=<label> profiles the refund with that feature taken out (bench/ablation.ts).
      const ablate = label === 'refund' ? process.env.PROFILE_ABLATE : undefined;
      await bundle(source, cpu, false, ablate);
      files.set(label, { cpu, init, ...(await bundle(source, init, BUNDLING.minify, ablate)) });
    }
    const workerFile = join(outDir, 'worker', 'index.js');
    const { build } = await import('esbuild');
    await build({
      entryPoints: [__filename],
      outfile: workerFile,
      bundle: true,
      platform: 'node',
      format: 'cjs',
      packages: 'external',
      logLevel: 'silent',
    });

    // 1. CPU per call, by module: both handlers in one process, PASSES processes
    const cpu = new Map<string, Measured>(
      ENTRIES.map(({ label }) => [
        label,
        { first: emptyCharged(), replay: emptyCharged(), calls: 0, processUs: { first: 0, replay: 0 } },
      ]),
    );
    for (let pass = 0; pass < PASSES; pass++) {
      const out = join(outDir, `cpu-${pass}.json`);
      const config: WorkerConfig = {
        handlers: ENTRIES.map(({ label }) => ({ label, file: files.get(label)!.cpu })),
        tenant: `profile-${pass}-${Date.now()}`,
        rounds: Math.ceil(ROUNDS / PASSES),
        out,
      };
      await runNode(
        node.path,
        [workerFile],
        environment('refund', workerFile, { PROFILE_WORKER: JSON.stringify(config) }),
      );
      const result = JSON.parse(readFileSync(out, 'utf8')) as Record<
        string,
        { first: PlainCharged; replay: PlainCharged; calls: number; processUs: Measured['processUs'] }
      >;
      for (const [label, measured] of Object.entries(result)) {
        const into = cpu.get(label)!;
        for (const phase of ['first', 'replay'] as const) {
          for (const [key, us] of measured[phase].byModule)
            into[phase].byModule.set(key, (into[phase].byModule.get(key) ?? 0) + us);
          for (const [key, us] of measured[phase].byFunction)
            into[phase].byFunction.set(key, (into[phase].byFunction.get(key) ?? 0) + us);
          into[phase].totalUs += measured[phase].totalUs;
          into.processUs[phase] += measured.processUs[phase];
        }
        into.calls += measured.calls;
      }
      rmSync(out);
    }

    // 2. Cold module init, by module
    const init = new Map(ENTRIES.map(({ label }) => [label, { charged: emptyCharged(), ms: [] as number[] }]));
    for (let sample = 0; sample < INIT_SAMPLES; sample++) {
      for (let turn = 0; turn < ENTRIES.length; turn++) {
        const { label } = ENTRIES[(sample + turn) % ENTRIES.length]!;
        const out = join(outDir, `init-${label}-${sample}.json`);
        const file = files.get(label)!.init;
        await runNode(node.path, ['-e', INIT_PROBE, file, out], environment(label, file));
        const { ms, profile } = JSON.parse(readFileSync(out, 'utf8')) as { ms: number; profile: Profile };
        charge(profile, init.get(label)!.charged);
        init.get(label)!.ms.push(ms);
      }
    }

    // Print
    const ours = cpu.get('refund')!;
    const bare = cpu.get('bare_refund')!;
    console.log(
      `\nCPU per call by part: refund (retrysafe, REST) vs bare Powertools, main-thread profile (V8 sampler, ${INTERVAL_US} µs), ` +
        `${ours.calls} first calls and ${ours.calls} replays each, Node ${node.version}, Lambda-like, DynamoDB Local`,
    );
    for (const phase of ['first', 'replay'] as const) {
      const rows = compare(ours[phase], bare[phase], [ours.calls, bare.calls], partOf);
      console.log(`\n${phase === 'first' ? 'first call' : 'replay'}: µs per call`);
      table(
        ['part', 'retrysafe', 'bare', 'difference'],
        [
          ...rows.map(({ key, x, y, d }) => [key, fmt(x), fmt(y), signed(d)]),
          [
            'profiled total (main thread)',
            fmt(ours[phase].totalUs / ours.calls),
            fmt(bare[phase].totalUs / bare.calls),
            signed(ours[phase].totalUs / ours.calls - bare[phase].totalUs / bare.calls),
          ],
          [
            'process CPU (all threads, cpuUsage)',
            fmt(ours.processUs[phase] / ours.calls),
            fmt(bare.processUs[phase] / bare.calls),
            signed(ours.processUs[phase] / ours.calls - bare.processUs[phase] / bare.calls),
          ],
        ],
      );
      console.log(`  by module (largest differences):`);
      table(
        ['module', 'retrysafe', 'bare', 'difference'],
        compare(ours[phase], bare[phase], [ours.calls, bare.calls], (m) => m, 14).map(({ key, x, y, d }) => [
          key,
          fmt(x),
          fmt(y),
          signed(d),
        ]),
      );
      console.log(`  functions retrysafe's call spends most in that the bare one does not (owner | function source):`);
      const fnRows = [...ours[phase].byFunction]
        .map(([key, us]) => ({ key, d: us / ours.calls - (bare[phase].byFunction.get(key) ?? 0) / bare.calls }))
        .sort((p, q) => q.d - p.d)
        .slice(0, 15);
      table(
        ['function', 'µs over bare'],
        fnRows.map(({ key, d }) => [key.replace('|', '  ').slice(0, 130), signed(d)]),
      );
    }

    const ms = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
    const oursInit = init.get('refund')!;
    const bareInit = init.get('bare_refund')!;
    const n = INIT_SAMPLES;
    console.log(
      `\nCold module init by module: require() of the deployed (minified) bundle in a fresh Lambda-like process, ` +
        `profiled, ${n} processes each; median require ${ms(oursInit.ms).toFixed(1)} ms vs ${ms(bareInit.ms).toFixed(1)} ms (profiler on); ` +
        `ms per init and KB in the bundle`,
    );
    const bytesOf = (label: string, module: string) => files.get(label)!.bytes.get(module) ?? 0;
    const initRows = compare(oursInit.charged, bareInit.charged, [n * 1000, n * 1000], (m) => m, 18);
    table(
      ['module', 'retrysafe ms', 'bare ms', 'difference', 'KB', 'bare KB'],
      [
        ...initRows.map(({ key, x, y, d }) => [
          key,
          x.toFixed(2),
          y.toFixed(2),
          `${d >= 0 ? '+' : '−'}${Math.abs(d).toFixed(2)}`,
          (bytesOf('refund', key) / 1024).toFixed(1),
          (bytesOf('bare_refund', key) / 1024).toFixed(1),
        ]),
        [
          'profiled total',
          (oursInit.charged.totalUs / n / 1000).toFixed(2),
          (bareInit.charged.totalUs / n / 1000).toFixed(2),
          `${((oursInit.charged.totalUs - bareInit.charged.totalUs) / n / 1000).toFixed(2)}`,
          (files.get('refund')!.total / 1024).toFixed(1),
          (files.get('bare_refund')!.total / 1024).toFixed(1),
        ],
      ],
    );
  } finally {
    rmSync(outDir, { recursive: true, force: true });
    await local?.stop();
  }
}

if (process.env.PROFILE_WORKER) {
  worker(JSON.parse(process.env.PROFILE_WORKER) as WorkerConfig).then(
    () => process.exit(0),
    (error) => {
      console.error(error);
      process.exit(1);
    },
  );
} else if (require.main === module) {
  main().catch((error) => {
    console.error(error);
    process.exitCode = 1;
  });
}
