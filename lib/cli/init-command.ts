// `retrysafe init`: a working app skeleton — one tool written the correct way (createOnce), its test on
// DynamoDB Local, the config `retrysafe dev` reads, the Lambda entries and a CDK app — so that a new app
// starts from something CI has run (examples/run creates one from the packed tarball and runs it).
import { existsSync, mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { DevError } from '../dev/dev-error';
import { packageManifest, packageRoot } from '../package-manifest';
import { flagsOf, UsageError } from './args';
import { installSource } from './install-source';

export const INIT_USAGE = `usage: retrysafe init [DIR] [--name NAME] [--retrysafe SPEC] [--force]

Writes an app skeleton into DIR (default: the current directory): one tool (add_note) with its test, its
table, its (empty) list of reads, retrysafe.config.ts, the Lambda entries and a CDK app, with package.json,
tsconfig.json, jest.config.js and cdk.json. Then: npm install && npm test && npx retrysafe dev.

  --name NAME       the package's name (default: DIR's name)
  --retrysafe SPEC  the retrysafe dependency in package.json: a version range, or a tarball (file:PATH or PATH)
                    (written absolute). Default: where this retrysafe was installed from — the tarball
                    that npx --package <tarball> ran, ^<version> from a registry; required from a checkout
  --force           write into a directory that is not empty (never overwrites a file)`;

/** The skeleton's files, by path. */
export function skeleton(name: string, retrysafe: string): Record<string, string> {
  const peers = packageManifest().peerDependencies;
  const packageJson = {
    name,
    private: true,
    scripts: {
      dev: 'retrysafe dev --watch',
      test: 'jest',
      typecheck: 'tsc --noEmit',
      synth: 'cdk synth --quiet',
    },
    dependencies: {
      '@aws-sdk/client-dynamodb': peers['@aws-sdk/client-dynamodb'],
      '@aws-sdk/lib-dynamodb': peers['@aws-sdk/lib-dynamodb'],
      retrysafe,
      zod: peers.zod,
    },
    devDependencies: {
      '@types/aws-lambda': peers['@types/aws-lambda'],
      '@types/jest': '^30.0.0',
      '@types/node': '^20.19.0',
      'aws-cdk': '^2.1148.1',
      'aws-cdk-lib': peers['aws-cdk-lib'],
      constructs: peers.constructs,
      esbuild: '^0.28.2',
      jest: '^30.5.2',
      'ts-jest': '^29.4.15',
      typescript: '~5.9.3',
    },
  };
  return {
    'package.json': `${JSON.stringify(packageJson, null, 2)}\n`,
    '.gitignore': 'node_modules/\ncdk.out/\n.local/\n',
    // isolatedModules: ts-jest compiles each file alone (without it, TS151002 on every run).
    'tsconfig.json': `${JSON.stringify(
      {
        compilerOptions: {
          target: 'ES2022',
          lib: ['ES2022'],
          module: 'node16',
          moduleResolution: 'node16',
          types: ['node', 'jest'],
          strict: true,
          esModuleInterop: true,
          skipLibCheck: true,
          isolatedModules: true,
          noEmit: true,
        },
        include: ['src', 'bin', 'test', 'retrysafe.config.ts'],
      },
      null,
      2,
    )}\n`,
    'jest.config.js': `/** @type {import('jest').Config} */
module.exports = {
  testEnvironment: 'node',
  roots: ['<rootDir>/test'],
  transform: { '^.+\\\\.ts$': ['ts-jest', { tsconfig: 'tsconfig.json' }] },
  testTimeout: 60_000,
};
`,
    'cdk.json': `${JSON.stringify({ app: 'npx tsx bin/app.ts' }, null, 2)}\n`,
    'retrysafe.config.ts': `// What \`retrysafe dev\`, \`calls\`, \`complete\` and \`erase\` know of this app: the same tools, services and
// tables its Lambda entries and its CDK app (bin/app.ts) are built from.
import { defineConfig } from 'retrysafe/config';
import { READS } from './src/reads';
import { services } from './src/services';
import { TABLES } from './src/tables';
import { TOOLS } from './src/tools';

export default defineConfig({ tools: TOOLS, reads: READS, services, tables: TABLES });
`,
    'src/tables.ts': `import type { TableSchema } from 'retrysafe/testing';

/** The app's tables, by the names the tools' \`access\` uses: the CDK app, the tests and \`retrysafe dev\` build them. */
export const TABLES = {
  notes: {
    partitionKey: { name: 'tenant', type: 'S' },
    sortKey: { name: 'note_id', type: 'S' },
    // Tenant erase finds a tenant's notes with one Query, and keeps a note a call still in flight wrote.
    tenantAttribute: 'tenant',
    callStamps: ['created_by'],
  },
} as const satisfies Record<string, TableSchema>;
`,
    'src/services.ts': `import type { CoreServices } from 'retrysafe/lambda';

/**
 * The app's services, composed once per process: every entry point, \`retrysafe dev\` and the tests pass
 * this one function. Table names come from the environment the construct (or the test store) sets.
 */
export function services({ documents, tableName }: CoreServices) {
  return { documents, notes: tableName('notes') };
}

export type Services = ReturnType<typeof services>;
`,
    'src/tools/add-note.ts': `import { defineToolModule, derivedId } from 'retrysafe/tools';
import { createOnce } from 'retrysafe/tools/dynamodb';
import * as z from 'zod/mini';
import type { Services } from '../services';

/** \`add_note\`: once per idempotency_key; a retry, a lost answer or a crash never writes a second note. */
export const addNote = defineToolModule({
  name: 'add_note',
  description: 'Add a note. Once per idempotency_key.',
  args: z.strictObject({ text: z.string().check(z.minLength(1), z.maxLength(2000)) }),
  annotations: { destructiveHint: false, openWorldHint: false },
  receipt: z.strictObject({ note_id: z.string(), text: z.string() }),
  access: { notes: ['dynamodb:PutItem'] },
  async execute(args, context, { documents, notes }: Services) {
    // The id derives from the call's downstream key, the same on every attempt of this call: a crashed
    // attempt's retry finds the note it wrote (stamped with its callId) and is told it executed.
    const { item, replayed } = await createOnce(documents, {
      table: notes,
      key: 'tenant',
      item: { tenant: context.identity.tenant, note_id: derivedId('note', context.downstreamKey), text: args.text },
      context,
    });
    return { receipt: { note_id: item.note_id, text: item.text }, replayed };
  },
});
`,
    'src/tools/index.ts': `import { registered } from 'retrysafe/lambda';
import { addNote } from './add-note';

/**
 * The app's one list of tools: the CDK app (bin/app.ts) deploys each with its function, route and grants,
 * and the MCP function, the completer, GET /tools and \`retrysafe dev\` serve them. A line is a tool and
 * the type of its Lambda entry (\`registered\`: the compiler checks that src/lambdas/<name>.ts exists and
 * serves that tool). A new tool: its file in src/tools/, its entry in src/lambdas/, a line here, and its
 * line in bin/app.ts's NEEDS (\`{}\` when it needs nothing but its tables), which the compiler asks for.
 */
export const TOOLS = [registered<typeof import('../lambdas/add_note')>(addNote)] as const;

/** The name of a tool of the list. */
export type ToolName = (typeof TOOLS)[number]['name'];
`,
    'src/reads/index.ts': `import type { ReadsOver } from 'retrysafe/lambda';
import type { Services } from '../services';

/**
 * The app's own reads (defineReadModule from retrysafe/tools: a GET route and a read-only MCP tool each),
 * none yet, over the app's services. The one list the config, the MCP and OpenAPI entries and the CDK app
 * all take: a read added here is served, documented and deployed everywhere at once.
 */
export const READS: ReadsOver<Services> = [];
`,
    'src/lambdas/add_note.ts': `import { toolEntry } from 'retrysafe/lambda/tool';
import { services } from '../services';
import { addNote } from '../tools/add-note';

export const handler = toolEntry(addNote, services);
`,
    'src/lambdas/mcp.ts': `import { mcpEntry } from 'retrysafe/lambda/mcp';
import { READS } from '../reads';
import { services } from '../services';
import { TOOLS } from '../tools';

export const handler = mcpEntry(TOOLS, services, { reads: READS });
`,
    'src/lambdas/complete.ts': `import { completerEntry } from 'retrysafe/lambda/completer';
import { services } from '../services';
import { TOOLS } from '../tools';

export const handler = completerEntry(TOOLS, services);
`,
    'src/lambdas/erase.ts': `import { eraseEntry } from 'retrysafe/lambda/erase';
import { TABLES } from '../tables';
import { TOOLS } from '../tools';

// A table waits only for the calls in flight whose tools access it (their \`access\` declarations).
export const handler = eraseEntry(TABLES, process.env, TOOLS);
`,
    'src/lambdas/list_tools.ts': `import { listToolsEntry } from 'retrysafe/lambda/listing';
import { TOOLS } from '../tools';

export const handler = listToolsEntry(TOOLS);
`,
    'src/lambdas/openapi.ts': `import { openApiEntry } from 'retrysafe/lambda/listing';
import { READS } from '../reads';
import { TOOLS } from '../tools';

export const handler = openApiEntry(TOOLS, READS);
`,
    'bin/app.ts': `// The app's CDK app: its table and the Retrysafe construct over its tools. \`npx cdk synth\` runs offline;
// to deploy, give your OIDC provider's issuer and audience (-c issuer=… -c audience=…).
import { join } from 'node:path';
import { App, Stack } from 'aws-cdk-lib';
import { definedTable, eraseAccessOf, Retrysafe, type ToolNeeds } from 'retrysafe/cdk';
import { READS } from '../src/reads';
import { TABLES } from '../src/tables';
import { TOOLS, type ToolName } from '../src/tools';

const app = new App();
const stack = new Stack(app, ${JSON.stringify(stackName(name))});
const entry = (file: string) => join(__dirname, '..', 'src', 'lambdas', \`\${file}.ts\`);

/**
 * What each tool's functions need besides its tables — an outside API's URL (\`environment\`), its key's
 * secret (\`secrets\`), its SDK (\`bundledModules\`) — one line per tool of TOOLS: the compiler refuses a
 * tool of TOOLS missing here, and a name that is not one.
 */
const NEEDS: Record<ToolName, ToolNeeds> = {
  add_note: {},
};

new Retrysafe(stack, 'Tools', {
  // Every tool of TOOLS, none other: a function, a route and exactly its declared grants each.
  tools: TOOLS.map((tool) => ({ tool, entry: entry(tool.name), needs: NEEDS[tool.name] })),
  reads: READS.map((read) => ({ read, entry: entry(read.name) })),
  entries: {
    mcp: entry('mcp'),
    complete: entry('complete'),
    list_tools: entry('list_tools'),
    openapi: entry('openapi'),
    erase: entry('erase'),
  },
  tables: { notes: definedTable(stack, 'Notes', TABLES.notes) },
  eraseAccess: eraseAccessOf(TABLES),
  issuer: app.node.tryGetContext('issuer') ?? 'https://issuer.example.com',
  audience: app.node.tryGetContext('audience') ?? ${JSON.stringify(name)},
});
`,
    'test/add-note.test.ts': `import { QueryCommand } from '@aws-sdk/lib-dynamodb';
import { newTenant, startTestStore, type TestStore } from 'retrysafe/testing';
import { services } from '../src/services';
import { TABLES } from '../src/tables';
import { addNote } from '../src/tools/add-note';

let store: TestStore;
beforeAll(async () => {
  store = await startTestStore({ tables: TABLES });
});
afterAll(() => store.stop());

/** The notes a tenant really has. */
async function notesOf(tenant: string) {
  const page = await store.core.documents.send(
    new QueryCommand({
      TableName: store.core.tableName('notes'),
      KeyConditionExpression: 'tenant = :tenant',
      ExpressionAttributeValues: { ':tenant': tenant },
      ConsistentRead: true,
    }),
  );
  return page.Items ?? [];
}

describe('add_note', () => {
  it('writes once per key: the replay answers the first receipt, other arguments are a conflict', async () => {
    const tool = store.tool(addNote, services);

    const first = await tool.call({ idempotency_key: 'k1', text: 'Call Ada back' });
    const replay = await tool.call({ idempotency_key: 'k1', text: 'Call Ada back' });
    const conflict = await tool.call({ idempotency_key: 'k1', text: 'Something else' });

    expect(first).toMatchObject({ ok: true, idempotent: false, receipt: { text: 'Call Ada back' } });
    expect(replay).toEqual({ ...first, idempotent: true });
    expect(conflict).toMatchObject({ ok: false, error: { code: 'conflict' } });
    expect(await notesOf(tool.caller.tenant)).toHaveLength(1);
  });

  it('survives a worker that dies after writing: one note, and exactly one answer says it executed', async () => {
    const caller = { tenant: newTenant(), user: 'ada' };
    const tool = store.tool(addNote, services);

    const { retry } = await tool.crashAndRetry({ idempotency_key: 'k1', text: 'Call Ada back' }, caller, {
      effects: async () => (await notesOf(caller.tenant)).length,
    });

    expect(retry).toMatchObject({ ok: true, idempotent: false });
  });
});
`,
  };
}

/** A CloudFormation stack name from a package name: letters, digits and hyphens, starting with a letter. */
function stackName(name: string): string {
  const cleaned = name
    .replace(/^@[^/]+\//, '')
    .replace(/[^A-Za-z0-9-]+/g, '-')
    .replace(/^[^A-Za-z]+/, '');
  return cleaned.length > 0 ? cleaned : 'App';
}

/**
 * The retrysafe dependency the new app's package.json names: `--retrysafe` as given, else one that
 * installs this very package — where npm recorded it came from (`installSource`). A registry range when
 * this copy came from a tarball would send the app's `npm install` to a registry that may not have it.
 */
function retrysafeDependency(given: string | undefined, cwd: string): { readonly spec: string; readonly from: string } {
  // A tarball, as file:PATH or as a bare path (`./retrysafe-0.1.0.tgz`, which npm takes for a file too).
  const givenPath = given?.startsWith('file:')
    ? given.slice('file:'.length)
    : given !== undefined && /^\.{0,2}\/|\.(tgz|tar\.gz)$/.test(given)
      ? given
      : undefined;
  if (given !== undefined && givenPath !== undefined) {
    // Written absolute: npm resolves a relative path from the new app's directory, not from here.
    const path = resolve(cwd, givenPath);
    if (!existsSync(path)) throw new UsageError(`--retrysafe: no file ${path} (from ${given})`, INIT_USAGE);
    return { spec: `file:${path}`, from: '--retrysafe' };
  }
  if (given !== undefined) {
    if (given.trim() === '') throw new UsageError('--retrysafe: empty (a version range, or file:PATH)', INIT_USAGE);
    return { spec: given, from: '--retrysafe' };
  }
  const version = packageManifest().version;
  const source = installSource(packageRoot(), version);
  if (source.kind === 'checkout') {
    throw new UsageError(
      `--retrysafe is required here: this retrysafe runs from a checkout (${source.dir}), which no dependency ` +
        'spec installs as a package. Pack it (npm run build && npm pack there) and pass ' +
        `--retrysafe file:<the absolute path of retrysafe-${version}.tgz>, or --retrysafe ^${version} once it is on a registry`,
      INIT_USAGE,
    );
  }
  if (source.kind === 'registry') return { spec: source.spec, from: `this retrysafe's version, from a registry` };
  const tarball = source.spec.startsWith('file:') ? source.spec.slice('file:'.length) : undefined;
  if (tarball !== undefined && !existsSync(tarball)) {
    throw new DevError(
      `${tarball}, the tarball this retrysafe was installed from, is gone: pass --retrysafe file:<where it is now>`,
    );
  }
  return { spec: source.spec, from: source.from };
}

/** `retrysafe init`. */
export async function initCommand(argv: readonly string[], cwd: string): Promise<number> {
  // DIR first, if given; then the flags.
  const [first, ...rest] = argv;
  const given = first !== undefined && !first.startsWith('-') ? first : undefined;
  const { values, help } = flagsOf(
    given === undefined ? argv : rest,
    { name: { type: 'string' }, retrysafe: { type: 'string' }, force: { type: 'boolean' } },
    INIT_USAGE,
  );
  if (help) {
    console.log(INIT_USAGE);
    return 0;
  }
  const dir = resolve(cwd, given ?? '.');
  const name = values.name ?? dir.split('/').pop() ?? 'app';
  if (!/^(@[a-z0-9-~][a-z0-9-._~]*\/)?[a-z0-9-~][a-z0-9-._~]*$/.test(name)) {
    throw new UsageError(`--name: "${name}" is not an npm package name (lowercase, no spaces)`, INIT_USAGE);
  }
  const dependency = retrysafeDependency(values.retrysafe, cwd);
  const files = skeleton(name, dependency.spec);
  if (existsSync(dir)) {
    const present = readdirSync(dir).filter((entry) => entry !== '.git');
    if (present.length > 0 && !values.force) {
      throw new DevError(`${dir} is not empty: init writes into an empty directory (--force: beside what is there)`);
    }
    const clashes = Object.keys(files).filter((file) => existsSync(join(dir, file)));
    if (clashes.length > 0) {
      throw new DevError(`${clashes.join(', ')} already exist in ${dir}: init never overwrites a file`);
    }
  }
  for (const [file, text] of Object.entries(files)) {
    mkdirSync(dirname(join(dir, file)), { recursive: true });
    writeFileSync(join(dir, file), text);
  }
  // As the user would cd there: relative below here, else the absolute path.
  const below = relative(cwd, dir);
  const where = below === '' ? '.' : below.startsWith('..') ? dir : below;
  console.log(
    [
      `retrysafe init: wrote ${Object.keys(files).length} files in ${where} (one tool, add_note, its test and a CDK app).`,
      `package.json depends on "retrysafe": "${dependency.spec}" (${dependency.from}).`,
      '',
      'Next:',
      ...(where === '.' ? [] : [`  cd ${where}`]),
      '  npm install',
      '  npm test                 # add_note on DynamoDB Local (Java 17+), a crash and a retry included',
      '  npx retrysafe dev        # REST + MCP on 127.0.0.1:3000',
      '  npx cdk synth            # the stack, offline',
    ].join('\n'),
  );
  return 0;
}
