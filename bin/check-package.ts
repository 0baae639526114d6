/**
 * `npm run check:package` (after `npm run build`): the package checked the way the ecosystem checks
 * packages, on the tarball `npm pack` makes — what ships, publint, arethetypeswrong — and what an agent
 * app installs to use `retrysafe/client`: `npm install retrysafe` brings the server's runtime too (one
 * install line for a team's own tools), but the client and its adapters load with none of it — checked by
 * deleting every other installed package before loading them. Prints the figures; exits non-zero on any
 * problem.
 */
import { execFileSync } from 'node:child_process';
import { lstatSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { commandFlags } from './cli-args';

const ROOT = join(__dirname, '..');
/** What may ship: the build, the README, the manifest, the licence. */
const SHIPPED = /^(dist\/.+\.(mjs|cjs|d\.mts|d\.cts)|README\.md|package\.json|LICENSE)$/;
/** The client's public subpaths: an agent app imports them with nothing else installed. */
const CLIENT_SUBPATHS = [
  'retrysafe/client',
  'retrysafe/client/openai',
  'retrysafe/client/anthropic',
  'retrysafe/client/ai-sdk',
];

interface PackResult {
  filename: string;
  size: number;
  unpackedSize: number;
  files: Array<{ path: string; size: number }>;
}

function run(command: string, args: string[], cwd: string): string {
  return execFileSync(command, args, { cwd, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
}

function sizeOf(path: string): number {
  const stat = lstatSync(path);
  if (!stat.isDirectory()) return stat.size;
  return readdirSync(path).reduce((total, name) => total + sizeOf(join(path, name)), 0);
}

const kb = (bytes: number) => `${(bytes / 1024).toFixed(1)} KB`;

/** The bytes of `entries` and of every file of the package they import, transitively (relative imports). */
function importedBytes(entries: readonly string[]): number {
  const seen = new Set<string>();
  const pending = [...entries];
  while (pending.length > 0) {
    const file = pending.pop()!;
    if (seen.has(file)) continue;
    seen.add(file);
    for (const [, target] of readFileSync(file, 'utf8').matchAll(/from\s*"(\.{1,2}\/[^"]+)"/g)) {
      pending.push(join(dirname(file), target!));
    }
  }
  return [...seen].reduce((total, file) => total + statSync(file).size, 0);
}

/**
 * A typed agent app's source: every client subpath's types used, the tools' types as `retrysafe types`
 * wrote them (tools.ts: the example's, app/client-types.ts), one deliberate mistake expected.
 */
const AGENT_APP_SOURCE = `import { RetrysafeClient, mintKey } from 'retrysafe/client';
import type { RetrysafeTools } from './tools.js';
import type * as openai from 'retrysafe/client/openai';
import type * as anthropic from 'retrysafe/client/anthropic';
import type * as aiSdk from 'retrysafe/client/ai-sdk';

export type Adapters = [typeof openai, typeof anthropic, typeof aiSdk];
const client = new RetrysafeClient<RetrysafeTools>({ baseUrl: 'http://127.0.0.1:3000', getToken: async () => 't' });
export async function refundOnce(invoice_id: string): Promise<number> {
  const { receipt } = await client.call('refund', { invoice_id, amount: 4200 }, { key: mintKey() });
  // @ts-expect-error amount is an integer of cents, never a string
  await client.call('refund', { invoice_id, amount: '42.00' });
  return receipt.amount;
}
`;

/** Type-checks a TypeScript agent app in `app` (whose node_modules holds retrysafe alone); its problems. */
function typeCheckAgentApp(app: string): string[] {
  writeFileSync(join(app, 'agent.mts'), AGENT_APP_SOURCE);
  writeFileSync(join(app, 'agent.cts'), AGENT_APP_SOURCE);
  writeFileSync(join(app, 'tools.ts'), readFileSync(join(ROOT, 'app', 'client-types.ts'), 'utf8'));
  writeFileSync(
    join(app, 'tsconfig.json'),
    JSON.stringify({
      compilerOptions: {
        strict: true,
        skipLibCheck: false,
        noEmit: true,
        module: 'nodenext',
        moduleResolution: 'nodenext',
        target: 'es2022',
        lib: ['es2022', 'dom'],
        types: [],
      },
      files: ['agent.mts', 'agent.cts', 'tools.ts'],
    }),
  );
  try {
    run(process.execPath, [join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', app], app);
    return [];
  } catch (error) {
    const output = (error as { stdout?: string }).stdout ?? (error as Error).message;
    return [`a TypeScript agent app (skipLibCheck off, retrysafe alone) does not type-check:\n${output}`];
  }
}

function main(): void {
  commandFlags(
    `usage: npm run check:package   (after npm run build)

Packs the tarball and checks it as the ecosystem does (what ships, publint, arethetypeswrong), installs it
in an agent app and loads and type-checks the client there with nothing else installed. No flags.`,
    {},
  );
  const problems: string[] = [];
  const work = mkdtempSync(join(tmpdir(), 'retrysafe-package-'));
  try {
    const [packed] = JSON.parse(run('npm', ['pack', '--json', '--pack-destination', work], ROOT)) as PackResult[];
    const tarball = join(work, packed!.filename);
    const files = packed!.files.map((file) => file.path);

    // What ships: the build and nothing of the repository's tests, fixtures, sources or local data.
    for (const file of files.filter((path) => !SHIPPED.test(path))) problems.push(`ships ${file}`);
    const manifest = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8'));
    const targets = JSON.stringify(manifest.exports).match(/\.\/dist\/[^"]+/g) ?? [];
    for (const target of targets.filter((target) => !files.includes(target.slice(2)))) {
      problems.push(`exports ${target}, which the tarball does not hold`);
    }

    try {
      // --strict: a warning fails too.
      run('npx', ['publint', '--pack', 'npm', '--level', 'warning', '--strict'], ROOT);
    } catch (error) {
      problems.push(`publint:\n${(error as { stdout?: string }).stdout ?? (error as Error).message}`);
    }
    try {
      run('npx', ['attw', tarball, '--format', 'table-flipped'], ROOT);
    } catch (error) {
      problems.push(`arethetypeswrong:\n${(error as { stdout?: string }).stdout ?? (error as Error).message}`);
    }

    // An agent app: a project that installs the tarball, then loads every client subpath both ways with
    // every other installed package deleted — the client needs none of the server's dependencies.
    const app = join(work, 'agent-app');
    run('mkdir', ['-p', app], work);
    writeFileSync(join(app, 'package.json'), JSON.stringify({ name: 'agent-app', private: true }));
    run('npm', ['install', tarball, '--no-audit', '--no-fund', '--prefer-offline'], app);
    const modules = join(app, 'node_modules');
    const installedBytes = sizeOf(modules);
    const optionalBytes = Object.keys(manifest.optionalDependencies ?? {})
      .map((name) => join(modules, name))
      .reduce((total, dir) => total + sizeOf(dir), 0);
    for (const name of readdirSync(modules).filter((name) => name !== 'retrysafe')) {
      rmSync(join(modules, name), { recursive: true, force: true });
    }
    for (const subpath of CLIENT_SUBPATHS) {
      try {
        run('node', ['-e', `require(${JSON.stringify(subpath)})`], app);
        run('node', ['--input-type=module', '-e', `await import(${JSON.stringify(subpath)})`], app);
      } catch (error) {
        problems.push(`${subpath} does not load without the server's dependencies: ${(error as Error).message}`);
      }
    }
    // A TypeScript agent app with the same node_modules (retrysafe alone): the client's declarations stand
    // alone — skipLibCheck off, no zod, SDK, Powertools or aws-lambda types — both ways (.mts resolves the
    // `import` condition, .cts the `require` one), and `RetrysafeTools` still refuses wrong arguments.
    for (const problem of typeCheckAgentApp(app)) problems.push(problem);
    const clientBytes = importedBytes(
      files
        .filter((path) => /^dist\/client\/.+\.mjs$/.test(path))
        .map((path) => join(app, 'node_modules/retrysafe', path)),
    );

    console.log(
      `tarball ${packed!.filename}: ${kb(packed!.size)} packed, ${kb(packed!.unpackedSize)} unpacked, ${files.length} files`,
    );
    console.log(
      `npm install retrysafe installs ${kb(installedBytes)} (${kb(installedBytes - optionalBytes)} with --omit=optional, without DynamoDB Local); the client loads none of it`,
    );
    console.log(
      `the client and its adapters load ${kb(clientBytes)} of ES modules (their files and the chunks they import)`,
    );
    if (problems.length > 0) {
      console.error(`package check: ${problems.length} problem(s)\n- ${problems.join('\n- ')}`);
      process.exitCode = 1;
    } else {
      console.log('package check: publint and arethetypeswrong pass; the tarball holds only the build');
    }
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

main();
