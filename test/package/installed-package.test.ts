/**
 * The package as an app installs it: its functions' bundles initialize, its declarations type-check beside
 * @types/aws-lambda. Found by the review of issue 15 (installable package); the construct's findings are in
 * test/infra/construct.test.ts, the harness's in test/integration/testing-harness.test.ts.
 *
 * The packaging tests use the built package through its `exports` map, as an app's node_modules/retrysafe
 * would: the sources as they are now, built once for this file into a temporary directory
 * (test/helpers/built-package.ts: nothing has to be built first, and no stale dist/ is tested), and a
 * temporary project whose node_modules/retrysafe links to that build.
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { build } from 'esbuild';
import { stackEsbuildOptions } from '../../lib/infra/defaults';
import { type BuiltPackage, buildPackage } from '../helpers/built-package';

const ROOT = join(__dirname, '..', '..');

let built: BuiltPackage | undefined;
beforeAll(async () => {
  built = await buildPackage();
}, 180_000);
afterAll(() => built?.cleanup());

/** The package built for this file: its package.json and dist/. */
function builtPackage(): string {
  if (built === undefined) throw new Error('the package was not built (see beforeAll)');
  return built.dir;
}

/** A project of an app's own with `node_modules/retrysafe` → the package built for this file. */
function appProject(): { dir: string; cleanup(): void } {
  const dir = mkdtempSync(join(tmpdir(), 'retrysafe-app-'));
  mkdirSync(join(dir, 'node_modules'));
  symlinkSync(builtPackage(), join(dir, 'node_modules', 'retrysafe'), 'dir');
  return { dir, cleanup: () => rmSync(dir, { recursive: true, force: true }) };
}

/**
 * `entrySource` bundled exactly as the Retrysafe construct's NodejsFunction bundles an app's entry file
 * (BUNDLING, `format: OutputFormat.CJS`, platform node), then loaded by plain node as Lambda loads
 * `index.js`. Returns node's stderr, or '' when the module initialized and exports a handler.
 */
async function bundleAndLoad(entrySource: string, env: Record<string, string> = {}): Promise<string> {
  const project = appProject();
  try {
    const entry = join(project.dir, 'entry.ts');
    writeFileSync(entry, entrySource);
    const outfile = join(project.dir, 'out', 'index.js');
    await build({
      entryPoints: [entry],
      ...stackEsbuildOptions(),
      outfile,
      logLevel: 'silent',
      // The app's own dependencies (zod, Powertools…) as its node_modules would hold them.
      nodePaths: [join(ROOT, 'node_modules')],
    });
    const loaded = spawnSync(
      process.execPath,
      [
        '-e',
        `const m = require(${JSON.stringify(outfile)}); if (typeof m.handler !== 'function') throw new Error('no handler');`,
      ],
      {
        encoding: 'utf8',
        env: {
          PATH: process.env.PATH ?? '',
          // The Lambda runtime provides the SDK (an external of the bundle): here, this repository's.
          NODE_PATH: join(ROOT, 'node_modules'),
          AWS_REGION: 'us-east-1',
          AWS_LAMBDA_FUNCTION_NAME: 'app',
          IDEMPOTENCY_TABLE: 'idempotency',
          OUTBOX_TABLE: 'outbox',
          JWT_ISSUER: 'https://issuer.example',
          JWT_AUDIENCE: 'app',
          RECHECK_QUEUE_URL: 'https://sqs.us-east-1.amazonaws.com/123456789012/rechecks',
          POWERTOOLS_TRACE_ENABLED: 'false',
          ...env,
        },
      },
    );
    return loaded.status === 0 ? '' : loaded.stderr;
  } finally {
    project.cleanup();
  }
}

/** A tool of the app's own, in the entry file itself (no path into lib/). */
const APP_TOOL = `
import * as z from 'zod/mini';
import { defineToolModule } from 'retrysafe/tools';
export const ping = defineToolModule({
  name: 'ping',
  description: 'Ping once per idempotency_key.',
  args: z.strictObject({ text: z.string() }),
  annotations: { destructiveHint: false, openWorldHint: false },
  access: {},
  async execute(args) { return { receipt: { text: args.text }, replayed: false }; },
});
const services = () => ({});
`;

describe('the functions the construct bundles from the installed package (the `import` condition, dist/*.mjs)', () => {
  // An app's entry file imports retrysafe/lambda/* with `import`: esbuild resolves the `import`
  // condition (dist/*.mjs) and bundles it as CommonJS (the construct's OutputFormat.CJS). The .mjs
  // chunk runs `createRequire(import.meta.url)` at module init; in a CJS bundle import.meta is {}.
  it.each([
    [
      'a tool (retrysafe/lambda/tool)',
      `import { toolEntry } from 'retrysafe/lambda/tool';\nexport const handler = toolEntry(ping, services);`,
    ],
    [
      'MCP (retrysafe/lambda/mcp)',
      `import { mcpEntry } from 'retrysafe/lambda/mcp';\nexport const handler = mcpEntry([ping], services, { reads: [] });`,
    ],
    [
      'the completer (retrysafe/lambda/completer)',
      `import { completerEntry } from 'retrysafe/lambda/completer';\nexport const handler = completerEntry([ping], services);`,
    ],
    [
      'GET /tools (retrysafe/lambda/listing)',
      `import { listToolsEntry } from 'retrysafe/lambda/listing';\nexport const handler = listToolsEntry([ping]);`,
    ],
  ])(
    '%s: its bundle initializes under plain node',
    async (_what, entry) => {
      expect(await bundleAndLoad(APP_TOOL + entry)).toBe('');
    },
    60_000,
  );

  it("the package's own get_operation and erase entries (dist/lambdas/*.mjs, bundled by the construct) initialize", async () => {
    for (const file of ['get_operation', 'erase_records']) {
      const stderr = await bundleAndLoad(
        `export { handler } from ${JSON.stringify(join(builtPackage(), 'dist', 'lambdas', `${file}.mjs`))};`,
      );
      expect([file, stderr]).toEqual([file, '']);
    }
  }, 60_000);
});

describe('the same entry through the `require` condition (dist/*.cjs)', () => {
  it('a tool entry that require()s retrysafe/tools and retrysafe/lambda/tool', async () => {
    const entry = APP_TOOL.replace("import * as z from 'zod/mini';", "const z = require('zod/mini');")
      .replace(
        "import { defineToolModule } from 'retrysafe/tools';",
        "const { defineToolModule } = require('retrysafe/tools');",
      )
      .concat(`const { toolEntry } = require('retrysafe/lambda/tool');\nexports.handler = toolEntry(ping, services);`)
      .replace('export const ping', 'const ping');
    expect(await bundleAndLoad(entry)).toBe('');
  }, 60_000);
});

describe("the package's declarations beside @types/aws-lambda", () => {
  // tsdown inlines @types/aws-lambda into dist/*.d.ts, global `awslambda` namespace included; any Lambda
  // project that has @types/aws-lambda (examples/own-tools does) and checks its libraries
  // (skipLibCheck off: `cdk init`'s tsconfig) gets TS2300 Duplicate identifier 'HttpResponseStream'.
  it('tsc passes on an app that imports retrysafe/lambda/tool and aws-lambda types, skipLibCheck off', () => {
    const project = appProject();
    try {
      writeFileSync(
        join(project.dir, 'entry.ts'),
        [
          "import type { APIGatewayProxyHandlerV2 } from 'aws-lambda';",
          "import { toolEntry } from 'retrysafe/lambda/tool';",
          "import { Retrysafe } from 'retrysafe/cdk';",
          'export const used: [typeof toolEntry, typeof Retrysafe] = [toolEntry, Retrysafe];',
          'export type H = APIGatewayProxyHandlerV2;',
        ].join('\n'),
      );
      writeFileSync(
        join(project.dir, 'tsconfig.json'),
        JSON.stringify({
          compilerOptions: {
            target: 'ES2022',
            module: 'node16',
            moduleResolution: 'node16',
            strict: true,
            noEmit: true,
            skipLibCheck: false,
            types: ['node', 'aws-lambda'],
            typeRoots: [join(ROOT, 'node_modules', '@types')],
          },
          files: ['entry.ts'],
        }),
      );
      const tsc = spawnSync(
        process.execPath,
        [join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', project.dir],
        {
          encoding: 'utf8',
        },
      );
      const errors = tsc.stdout.split('\n').filter((line) => line.includes('error TS'));
      expect(errors).toEqual([]);
    } finally {
      project.cleanup();
    }
  }, 120_000);
});
