/**
 * Cold module init of the MCP function against the official SDK v2's minimal server (issue 35's budget:
 * no worse than 1.1× it), and the bundles' sizes. Each entry is bundled exactly as the stack bundles it;
 * a fresh process per sample requires the bundle, as Lambda's init does, on the Node.js the stack deploys
 * (bench/deployed-node.ts); the entries are interleaved sample by sample, so drift in the machine's load
 * falls on all of them.
 *
 *   npx tsx bench/mcp-init.ts [--samples N] [--before DIR]
 *
 *   mcp           lambdas/mcp.ts: both MCP eras on the SDK v2 server, every tool, token verification
 *   bare_mcp_v2   bench/bare-mcp-v2.ts: the SDK v2's minimal server (createMcpHandler, one tool), bare Powertools refund
 *   bare_mcp_v1   bench/bare-mcp.ts: the SDK v1's minimal stateless server, the same tool
 *   mcp_before    DIR's lambdas/mcp.ts (another checkout with its node_modules), when --before is given
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { parseArgs } from 'node:util';
import { DEFAULT_TRACING_DEPTH, FUNCTION_DEFAULTS, LAMBDA_RUNTIME, tracingEnvironment } from '../lib/infra/defaults';
import { bundle, INIT_PROBE, median, runNode } from './against-bare';
import { describeDeployedNode, resolveDeployedNode } from './deployed-node';
import { deployedTableNames, lambdaEnvironment } from './lambda-like';

const ROOT = join(__dirname, '..');

interface InitEntry {
  readonly label: string;
  readonly source: string;
  /** Where its external packages resolve (the checkout it belongs to). */
  readonly nodeModules: string;
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: { samples: { type: 'string', default: '21' }, before: { type: 'string' } },
  });
  const samples = Number(values.samples);
  const node = resolveDeployedNode();
  console.log(describeDeployedNode(node));
  const entries: InitEntry[] = [
    { label: 'mcp', source: join(ROOT, 'lambdas/mcp.ts'), nodeModules: join(ROOT, 'node_modules') },
    { label: 'bare_mcp_v2', source: join(__dirname, 'bare-mcp-v2.ts'), nodeModules: join(ROOT, 'node_modules') },
    { label: 'bare_mcp_v1', source: join(__dirname, 'bare-mcp.ts'), nodeModules: join(ROOT, 'node_modules') },
  ];
  if (values.before) {
    entries.push({
      label: 'mcp_before',
      source: join(values.before, 'lambdas/mcp.ts'),
      nodeModules: join(values.before, 'node_modules'),
    });
  }

  const outDir = mkdtempSync(join(tmpdir(), 'retrysafe-mcp-init-'));
  try {
    const files = new Map<string, { file: string; bytes: number }>();
    for (const { label, source } of entries) {
      const file = join(outDir, label, 'index.js');
      files.set(label, { file, bytes: await bundle(source, file) });
    }
    const taken = new Map(entries.map(({ label }) => [label, [] as number[]]));
    const takenCpu = new Map(entries.map(({ label }) => [label, [] as number[]]));
    for (let sample = 0; sample < samples; sample++) {
      for (let turn = 0; turn < entries.length; turn++) {
        const { label, nodeModules } = entries[(sample + turn) % entries.length]!;
        const file = files.get(label)!.file;
        const env = lambdaEnvironment({
          functionName: label,
          runtime: LAMBDA_RUNTIME.name,
          taskRoot: dirname(file),
          nodePath: nodeModules,
          // Nothing listens: init sends nothing (a segment is sent per invocation).
          xrayDaemonPort: 2000,
          functionEnvironment: {
            ...deployedTableNames(),
            POWERTOOLS_SERVICE_NAME: FUNCTION_DEFAULTS.serviceName,
            ...tracingEnvironment(DEFAULT_TRACING_DEPTH),
            // Read at init, fetched on the first token only.
            JWT_ISSUER: 'http://127.0.0.1:9',
            JWT_AUDIENCE: 'retrysafe',
            JWKS_URL: 'http://127.0.0.1:9/jwks.json',
          },
          extra: {},
        });
        const measured = JSON.parse(await runNode(node.path, ['-e', INIT_PROBE, file], env)) as {
          module: number;
          moduleCpu: number;
        };
        taken.get(label)!.push(measured.module);
        takenCpu.get(label)!.push(measured.moduleCpu);
      }
    }
    const row = (figures: Map<string, number[]>, label: string, bare: number) => {
      const sorted = [...figures.get(label)!].sort((a, b) => a - b);
      const ms = median(sorted);
      const quartiles = `${sorted[Math.floor(sorted.length / 4)]!.toFixed(1)}–${sorted[Math.floor((sorted.length * 3) / 4)]!.toFixed(1)}`;
      return `${ms.toFixed(1).padStart(7)} ms (IQR ${quartiles.padEnd(13)}) ${(ms / bare).toFixed(2)}×`;
    };
    const bareWall = median(taken.get('bare_mcp_v2')!);
    const bareCpu = median(takenCpu.get('bare_mcp_v2')!);
    console.log(
      `cold module init, median of ${samples} fresh processes each (interleaved), × bare_mcp_v2; bundle size:\n` +
        `  ${''.padEnd(12)} ${'wall'.padEnd(37)} ${'CPU'.padEnd(37)} bytes`,
    );
    for (const { label } of entries) {
      console.log(
        `  ${label.padEnd(12)} ${row(taken, label, bareWall)}  ${row(takenCpu, label, bareCpu)}  ${files.get(label)!.bytes.toLocaleString('en').padStart(9)}`,
      );
    }
    const verdict = (ratio: number) => `${ratio.toFixed(2)}× (${ratio <= 1.1 ? 'met' : 'missed'})`;
    console.log(
      `budget: mcp ≤ 1.1× bare_mcp_v2 — wall ${verdict(median(taken.get('mcp')!) / bareWall)}, CPU ${verdict(median(takenCpu.get('mcp')!) / bareCpu)}`,
    );
  } finally {
    rmSync(outDir, { recursive: true, force: true });
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exitCode = 1;
});
