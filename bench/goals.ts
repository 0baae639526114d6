/**
 * The performance goals (issue 16), each printed next to the bare Powertools baseline: what is measured,
 * the figure, the goal, and by how much it is met or missed. Every function's process (cold starts, CPU
 * and latency per call, and the `--before` checkout's) runs on the Node.js the stack deploys
 * (`options.node`: bench/deployed-node.ts).
 */
import { join } from 'node:path';
import { DEFAULT_TRACING_DEPTH, FUNCTION_DEFAULTS, tracingEnvironment } from '../lib/infra/defaults';
import { ABLATIONS, ALL_OUT } from './ablation';
import { type AgainstBareReport, benchAgainstBare, type Entry, type WorkerRun } from './against-bare';
import type { DeployedNode } from './deployed-node';
import { deployedTableNames } from './lambda-like';

const ROOT = join(__dirname, '..');

/** The environment the stack gives every function, as far as performance goes (no NODE_OPTIONS). */
const DEPLOYED = {
  ...deployedTableNames(),
  POWERTOOLS_SERVICE_NAME: FUNCTION_DEFAULTS.serviceName,
  ...tracingEnvironment(DEFAULT_TRACING_DEPTH),
};

export interface GoalsOptions {
  /** The Node.js binary the functions run on. */
  readonly node: DeployedNode;
  /** DynamoDB Local's endpoint and credentials. */
  readonly store: Readonly<Record<string, string>>;
  /** Another checkout of retrysafe (with its node_modules) to measure as "before", deployed as it was then. */
  readonly before?: string;
  readonly initSamples: number;
  readonly rounds: number;
  /** Rounds of the ablation run (bench/ablation.ts): its differences are smaller than the goals'. */
  readonly ablationRounds: number;
}

export async function benchGoals(options: GoalsOptions): Promise<void> {
  const entries: Entry[] = [
    { label: 'refund', source: join(ROOT, 'lambdas/refund.ts'), transport: 'rest', environment: DEPLOYED },
    { label: 'bare_refund', source: join(__dirname, 'bare-refund.ts'), transport: 'rest', environment: DEPLOYED },
    { label: 'mcp', source: join(ROOT, 'lambdas/mcp.ts'), transport: 'mcp', environment: DEPLOYED },
    { label: 'bare_mcp', source: join(__dirname, 'bare-mcp-v2.ts'), transport: 'mcp', environment: DEPLOYED },
    {
      label: 'refund_calls',
      source: join(ROOT, 'lambdas/refund.ts'),
      transport: 'rest',
      environment: { ...DEPLOYED, ...tracingEnvironment('calls') },
    },
    {
      label: 'refund_source_maps',
      source: join(ROOT, 'lambdas/refund.ts'),
      transport: 'rest',
      environment: { ...DEPLOYED, NODE_OPTIONS: '--enable-source-maps' },
    },
  ];
  const initLabels = ['refund', 'bare_refund', 'mcp', 'bare_mcp', 'refund_calls', 'refund_source_maps'];
  const ablations = [...ABLATIONS, ALL_OUT];
  for (const { label, edits } of ablations) {
    entries.push({ label, source: join(ROOT, 'lambdas/refund.ts'), transport: 'rest', environment: DEPLOYED, edits });
  }
  const workers: WorkerRun[] = [
    { name: 'deployed', labels: ['refund', 'bare_refund', 'mcp', 'bare_mcp'] },
    // The X-Ray SDK's hook is process-wide: traced calls get a process of their own.
    { name: 'calls', labels: ['refund_calls', 'bare_refund'] },
    // The refund with one feature taken out at a time, next to the deployed one and the bare handler.
    {
      name: 'ablation',
      labels: ['refund', 'bare_refund', ...ablations.map(({ label }) => label)],
      rounds: options.ablationRounds,
    },
  ];
  if (options.before) {
    // As it was deployed before this work: source maps enabled, the Tracer on (Powertools' default).
    const then = { POWERTOOLS_SERVICE_NAME: FUNCTION_DEFAULTS.serviceName, NODE_OPTIONS: '--enable-source-maps' };
    const nodeModules = join(options.before, 'node_modules');
    entries.push(
      {
        label: 'refund_before',
        source: join(options.before, 'lambdas/refund.ts'),
        transport: 'rest',
        environment: then,
        nodeModules,
      },
      {
        label: 'mcp_before',
        source: join(options.before, 'lambdas/mcp.ts'),
        transport: 'mcp',
        environment: then,
        nodeModules,
      },
    );
    initLabels.push('refund_before', 'mcp_before');
    workers.push({ name: 'before', labels: ['refund_before', 'bare_refund', 'mcp_before', 'bare_mcp'] });
  }
  const report = await benchAgainstBare({
    node: options.node,
    entries,
    initLabels,
    workers,
    store: options.store,
    initSamples: options.initSamples,
    warmup: 30,
    rounds: options.rounds,
    passes: 2,
  });
  printGoals(report, options.before !== undefined);
}

const us = (value: number) => `${Math.round(value).toLocaleString('en')} µs`;
const ms = (value: number) => `${value.toFixed(1)} ms`;
const ratio = (value: number) => `${value.toFixed(2)}×`;
const signed = (value: number, unit: (v: number) => string) => `${value >= 0 ? '+' : '−'}${unit(Math.abs(value))}`;

/** "met", or by how much the figure misses its bound (smaller is better). */
function verdict(figure: number, bound: number, unit: (v: number) => string): string {
  return figure <= bound ? 'met' : `missed by ${unit(figure - bound)}`;
}

export function printGoals(report: AgainstBareReport, withBefore: boolean): void {
  const { init, calls, traces, logLine } = report;
  const deployed = calls.deployed!;
  const rows: string[][] = [];
  const row = (what: string, ours: string, bare: string, over: string, goal: string, result: string, before = '') =>
    rows.push([what, ours, bare, over, goal, result, ...(withBefore ? [before] : [])]);
  const before = withBefore ? calls.before! : undefined;

  for (const [kind, name] of [
    ['first', 'first call'],
    ['replay', 'replay'],
  ] as const) {
    const ours = deployed.refund![kind];
    const bare = deployed.bare_refund![kind];
    const over = ours.cpuUs - bare.cpuUs;
    const then = before?.refund_before?.[kind];
    row(
      `CPU per ${name}, refund (REST)`,
      us(ours.cpuUs),
      us(bare.cpuUs),
      `${signed(over, us)} (${signed((over / bare.cpuUs) * 100, (v) => `${v.toFixed(0)}%`)})`,
      '≤ +100 µs',
      verdict(over, 100, us),
      then ? `${signed(then.cpuUs - before!.bare_refund![kind].cpuUs, us)} over bare` : '',
    );
  }
  for (const [kind, name] of [
    ['first', 'first call'],
    ['replay', 'replay'],
  ] as const) {
    const ours = deployed.refund![kind];
    const bare = deployed.bare_refund![kind];
    const then = before?.refund_before?.[kind];
    row(
      `latency of a ${name} (DynamoDB Local)`,
      ms(ours.wallMs),
      ms(bare.wallMs),
      ratio(ours.wallMs / bare.wallMs),
      '≤ 1.05×',
      verdict(ours.wallMs / bare.wallMs, 1.05, (v) => v.toFixed(2)),
      then ? ratio(then.wallMs / before!.bare_refund![kind].wallMs) : '',
    );
  }
  const initRow = (what: string, label: string, bareLabel: string, bound: number, beforeLabel: string) => {
    const value = init[label]!.moduleMs / init[bareLabel]!.moduleMs;
    const then = init[beforeLabel];
    row(
      what,
      ms(init[label]!.moduleMs),
      ms(init[bareLabel]!.moduleMs),
      ratio(value),
      `≤ ${bound.toFixed(1)}×`,
      verdict(value, bound, (v) => `${v.toFixed(2)}× (${ms(v * init[bareLabel]!.moduleMs)})`),
      then ? ratio(then.moduleMs / init[bareLabel]!.moduleMs) : '',
    );
  };
  initRow('cold module init, refund function', 'refund', 'bare_refund', 1.0, 'refund_before');
  initRow('cold module init, MCP function', 'mcp', 'bare_mcp', 1.1, 'mcp_before');
  for (const [kind, name] of [
    ['first', 'first call'],
    ['replay', 'replay'],
  ] as const) {
    const ours = deployed.mcp![kind];
    const bare = deployed.bare_mcp![kind];
    const then = before?.mcp_before?.[kind];
    row(
      `MCP: CPU per tools/call refund, ${name}`,
      us(ours.cpuUs),
      us(bare.cpuUs),
      signed(ours.cpuUs - bare.cpuUs, us),
      'nothing built per request',
      '—',
      then ? `${signed(then.cpuUs - before!.bare_mcp![kind].cpuUs, us)} over bare` : '',
    );
  }

  const header = [
    'measured',
    'retrysafe',
    'bare',
    'over bare',
    'goal',
    'result',
    ...(withBefore ? ['before this work'] : []),
  ];
  const widths = header.map((title, column) => Math.max(title.length, ...rows.map((cells) => cells[column]!.length)));
  const line = (cells: string[]) =>
    `  ${cells.map((cell, column) => cell.padEnd(widths[column]!)).join('  ')}`.trimEnd();
  const samples = deployed.refund!.first.samples;
  console.log(
    `\nretrysafe next to a bare Powertools makeIdempotent handler doing the same DynamoDB calls (bench/bare-*.ts), ` +
      `each bundled as deployed, in Lambda-like Node ${report.node} processes on DynamoDB Local; ` +
      `tracing as deployed (${DEFAULT_TRACING_DEPTH}); CPU is user + system of the whole process; medians of ${samples} calls, ` +
      `${init.refund!.samples} cold starts`,
  );
  console.log(line(header));
  for (const cells of rows) console.log(line(cells));

  const traced = calls.calls!;
  const subsegments = Object.entries(traces.calls?.refund_calls ?? {})
    .map(([name, count]) => `${name} ${count}`)
    .join(', ');
  console.log(
    `  tracing: calls (-c tracing=calls, its own process): CPU per first call ${us(traced.refund_calls!.first.cpuUs)} ` +
      `(${signed(traced.refund_calls!.first.cpuUs - deployed.refund!.first.cpuUs, us)} on tracing: invocations), replay ` +
      `${us(traced.refund_calls!.replay.cpuUs)} (${signed(traced.refund_calls!.replay.cpuUs - deployed.refund!.replay.cpuUs, us)}); ` +
      `the bare handler in that process ${signed(traced.bare_refund!.first.cpuUs - deployed.bare_refund!.first.cpuUs, us)} per first call ` +
      `(the X-Ray SDK's async hook is process-wide); cold module init ${ms(init.refund_calls!.moduleMs)} ` +
      `(${signed(init.refund_calls!.moduleMs - init.refund!.moduleMs, ms)}); X-Ray subsegments per first call: ${subsegments || 'none'}`,
  );
  console.log(
    `  NODE_OPTIONS=--enable-source-maps: cold module init ${ms(init.refund_source_maps!.moduleMs)} ` +
      `(${signed(init.refund_source_maps!.moduleMs - init.refund!.moduleMs, ms)})`,
  );
  console.log(
    `  one log line (Powertools Logger, stdout a pipe as on Lambda) costs ${us(logLine.cpuUs)} of CPU here ` +
      `(the same line by hand, JSON.stringify and one write: ${us(logLine.byHandUs)}); ` +
      `a call writes one (its log line, carrying its embedded metrics), the bare handler none`,
  );
  printAblation(calls.ablation!);
  const kb = (label: string) => `${(init[label]!.bytes / 1024).toFixed(1)} KB`;
  console.log(
    `  bundles (minified, without the SDK): refund ${kb('refund')} (bare ${kb('bare_refund')}), ` +
      `mcp ${kb('mcp')} (bare ${kb('bare_mcp')})`,
  );
}

/**
 * What each feature costs per call: per round, the deployed refund's CPU less the variant's without it
 * (the handlers were called in turn, so a round's load falls on both); the median of those differences,
 * ± a box plot's notch (1.58 × IQR / √n, McGill et al.): two medians whose notches do not overlap differ,
 * at roughly 95 % confidence.
 */
function printAblation(measured: AgainstBareReport['calls'][string]): void {
  const paired = (minuend: string, subtrahend: string, kind: 'first' | 'replay') => {
    const a = measured[minuend]![kind].cpuUsEach;
    const b = measured[subtrahend]![kind].cpuUsEach;
    const differences = a.map((value, i) => value - b[i]!).sort((x, y) => x - y);
    const at = (q: number) => differences[Math.floor(q * (differences.length - 1))]!;
    const notch = (1.58 * (at(0.75) - at(0.25))) / Math.sqrt(differences.length);
    return `${signed(at(0.5), us)} ± ${Math.round(notch)}`;
  };
  const rows = [
    ...ABLATIONS.map(({ label, feature }) => [
      feature,
      paired('refund', label, 'first'),
      paired('refund', label, 'replay'),
    ]),
    [
      "with all of them out, still over bare (retrysafe's bookkeeping)",
      paired(ALL_OUT.label, 'bare_refund', 'first'),
      paired(ALL_OUT.label, 'bare_refund', 'replay'),
    ],
    [
      'the deployed refund over bare, in this process',
      paired('refund', 'bare_refund', 'first'),
      paired('refund', 'bare_refund', 'replay'),
    ],
  ];
  const header = ['feature taken out (bench/ablation.ts)', 'first call', 'replay'];
  const widths = header.map((title, column) => Math.max(title.length, ...rows.map((cells) => cells[column]!.length)));
  console.log(
    `  where the CPU over bare goes: the refund bundled with one feature taken out, called in turn with the ` +
      `deployed refund and the bare handler in one process; what the feature costs per call (median of ` +
      `${measured.refund!.first.samples} paired differences ± its notch, 1.58·IQR/√n):`,
  );
  for (const cells of [header, ...rows]) {
    console.log(
      `    ${cells.map((cell, column) => (column === 0 ? cell.padEnd(widths[0]!) : cell.padStart(widths[column]!))).join('  ')}`,
    );
  }
}
