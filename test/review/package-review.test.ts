/**
 * Review of issue 15 (installable package): each test here states what an app adopting retrysafe for its
 * own tools would hit, and fails while the defect is there.
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
import { App, Stack } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { build } from 'esbuild';
import { TABLES } from '../../app/tables';
import { stackEsbuildOptions } from '../../lib/infra/defaults';
import { Retrysafe, type RetrysafeProps } from '../../lib/infra/retrysafe';
import { tableFromDefinition } from '../../lib/infra/table';
import { sendReminder } from '../fixtures/tools/send-reminder';
import { type BuiltPackage, buildPackage } from '../helpers/built-package';

const ROOT = join(__dirname, '..', '..');
const LAMBDAS = join(ROOT, 'lambdas');
const FIXTURE_LAMBDAS = join(ROOT, 'test', 'fixtures', 'lambdas');

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
  const dir = mkdtempSync(join(tmpdir(), 'retrysafe-review-'));
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
          AWS_LAMBDA_FUNCTION_NAME: 'review',
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

describe('finding 1: the functions the construct bundles from the installed package crash at init', () => {
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

describe('finding 1, control: the same entry, loaded through the `require` condition (dist/*.cjs), initializes', () => {
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

/** The Retrysafe construct in stack `id` of `app`, over one tool and one table of the app's own; no bundling. */
function appStack(app: App, id: string, overrides: Partial<RetrysafeProps> = {}) {
  const stack = new Stack(app, id, { env: { account: '123456789012', region: 'eu-west-1' } });
  const outbox = tableFromDefinition(stack, 'Outbox', TABLES.outbox);
  const retrysafe = new Retrysafe(stack, 'Tools', {
    tools: [{ tool: sendReminder, entry: join(FIXTURE_LAMBDAS, 'send_reminder.ts') }],
    entries: {
      mcp: join(LAMBDAS, 'mcp.ts'),
      complete: join(LAMBDAS, 'complete.ts'),
      list_tools: join(LAMBDAS, 'list_tools.ts'),
      openapi: join(LAMBDAS, 'openapi.ts'),
    },
    tables: { outbox },
    issuer: 'https://issuer.example',
    audience: 'app',
    ...overrides,
  });
  // biome-ignore lint/suspicious/noExplicitAny: CloudFormation properties are asserted structurally
  const resources = Template.fromStack(stack).toJSON().Resources as Record<string, { Type: string; Properties: any }>;
  return { stack, retrysafe, resources };
}

describe('finding 2: two deployments of the construct in one account share a physical dashboard name and their metrics', () => {
  // A team's dev and prod stacks (or two teams' apps, or this repository's example stack next to an app)
  // in one account: CloudWatch dashboard names are unique per account, so the second stack's
  // AWS::CloudWatch::Dashboard fails to create; and every alarm reads metrics of service=retrysafe, so
  // one deployment's alarms fire on the other's calls. The construct has no prop to tell them apart.
  it('each stack gets a dashboard of its own', () => {
    const names = ['Dev', 'Prod'].map((id) => {
      const { resources } = appStack(new App({ context: { 'aws:cdk:bundling-stacks': [] } }), id);
      const dashboards = Object.values(resources).filter((r) => r.Type === 'AWS::CloudWatch::Dashboard');
      return dashboards.map((d) => d.Properties.DashboardName);
    });

    expect(names[0]).toHaveLength(1);
    expect(names[0]![0]).not.toEqual(names[1]![0]);
  });

  it("each stack's functions write their metrics under a service of their own", () => {
    const services = ['Dev', 'Prod'].map((id) => {
      const { stack, retrysafe, resources } = appStack(new App({ context: { 'aws:cdk:bundling-stacks': [] } }), id);
      const fn = resources[stack.getLogicalId(retrysafe.functions.send_reminder!.node.defaultChild as never)]!;
      return fn.Properties.Environment.Variables.POWERTOOLS_SERVICE_NAME;
    });

    expect(services[0]).not.toEqual(services[1]);
  });
});

describe("finding 3: the package's declarations break an app's type check beside @types/aws-lambda", () => {
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

describe('finding 4: crashAndRetry hangs (never fails) when the dying worker does not execute', () => {
  // The harness waits for the first worker's execute to finish its effect; if that worker's call is a
  // replay (the harness's default caller reused with a key a previous `call` used), or its execute
  // throws (a business error), the promise never settles: the test times out with no message instead
  // of failing with one.
  it('answers (or rejects) within 5 s when the key was already used by a call of the same harness', async () => {
    const { startTestStore } = await import('../../lib/testing/test-store');
    const store = await startTestStore({
      endpoint: process.env.DYNAMODB_ENDPOINT!,
      tables: {
        outbox: {
          partitionKey: TABLES.outbox.partitionKey,
          sortKey: TABLES.outbox.sortKey,
          defaultName: `review-outbox-${Date.now()}`,
        },
      },
    });
    try {
      const { Outbox } = await import('../../app/domain/outbox');
      const tool = store.tool(sendReminder, ({ documents, tableName }) => ({
        outbox: new Outbox(documents, tableName('outbox')),
      }));
      const args = { idempotency_key: 'k1', to: 'ada@example.com', text: 'hi' };
      expect(await tool.call(args)).toMatchObject({ ok: true, idempotent: false });

      const settled = await Promise.race([
        tool.crashAndRetry(args).then(
          () => 'answered',
          () => 'rejected',
        ),
        new Promise((resolve) => setTimeout(() => resolve('still waiting after 5 s'), 5_000)),
      ]);
      expect(settled).not.toBe('still waiting after 5 s');
    } finally {
      await store.stop();
    }
  }, 20_000);
});

describe('finding 5: the construct cannot point the MCP function at a JWKS other than <issuer>/.well-known/jwks.json', () => {
  // docs/deploy.md: "Any OIDC provider that signs its tokens with RSA (RS256) works". The JWT
  // authorizer discovers the keys; the MCP function fetches `<issuer>/.well-known/jwks.json` unless
  // JWKS_URL is set — Cognito's and Auth0's location, not Okta's (/v1/keys), Keycloak's or Entra ID's.
  // RetrysafeProps has issuer, audience, tenantClaim and no JWKS location; the construct sets no JWKS_URL.
  it("an Okta issuer: the MCP function is given the issuer's JWKS location", () => {
    const okta = 'https://dev-1.okta.com/oauth2/default';
    const { stack, retrysafe, resources } = appStack(new App({ context: { 'aws:cdk:bundling-stacks': [] } }), 'Okta', {
      issuer: okta,
      ...({ jwksUrl: `${okta}/v1/keys` } as Partial<RetrysafeProps>),
    });
    const mcp = resources[stack.getLogicalId(retrysafe.functions.mcp!.node.defaultChild as never)]!;

    expect(mcp.Properties.Environment.Variables.JWKS_URL).toBe(`${okta}/v1/keys`);
  });
});
