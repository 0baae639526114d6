/**
 * `retrysafe dev` from an app's directory (a temporary one, outside this repository's root): what it says
 * for the mistakes a newcomer makes — one message, exit 2, never a stack — and `--watch`.
 */
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { promisify } from 'node:util';

const run = promisify(execFile);
const ROOT = join(__dirname, '..', '..');
const BIN = join(ROOT, 'lib', 'cli', 'bin.ts');
/** Node's flags to run the command from its TypeScript sources, from any directory. */
const NODE = ['--import', pathToFileURL(join(ROOT, 'node_modules', 'tsx', 'dist', 'loader.mjs')).href, BIN];
/** An import path into this repository's sources, as a config written in a temporary app spells it. */
const lib = (path: string) => JSON.stringify(join(ROOT, 'lib', path));

const apps: string[] = [];
afterAll(() => {
  for (const dir of apps) rmSync(dir, { recursive: true, force: true });
});

/** A temporary app directory with these files; its node_modules is this repository's (zod, the SDK). */
function app(files: Record<string, string>): string {
  const dir = mkdtempSync(join(tmpdir(), 'retrysafe-app-'));
  apps.push(dir);
  symlinkSync(join(ROOT, 'node_modules'), join(dir, 'node_modules'), 'dir');
  for (const [name, text] of Object.entries(files)) writeFileSync(join(dir, name), text);
  return dir;
}

/** `retrysafe <args>` in `cwd`: its exit code and what it printed. */
async function retrysafe(cwd: string, args: string[], env: NodeJS.ProcessEnv = {}) {
  try {
    const { stdout, stderr } = await run(process.execPath, [...NODE, ...args], {
      cwd,
      env: { ...process.env, DEV_KEY_DIR: join(cwd, '.local'), ...env },
      timeout: 60_000,
    });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const failed = error as { code: number; stdout: string; stderr: string };
    return { code: failed.code, stdout: failed.stdout, stderr: failed.stderr };
  }
}

/** A tool that writes to a table of the app's (`contacts`). */
const CONTACT_TOOL = `
import * as z from 'zod/mini';
import { defineToolModule } from ${lib('tools/tool-module')};
export const addContact = defineToolModule({
  name: 'add_contact',
  description: 'Add a contact.',
  args: z.strictObject({ email: z.string().check(z.minLength(3)) }),
  annotations: { destructiveHint: false, openWorldHint: false },
  receipt: z.strictObject({ email: z.string() }),
  access: { contacts: ['dynamodb:PutItem'] },
  async execute(args) {
    return { receipt: { email: args.email }, replayed: false };
  },
});
`;

const STACK = /\n\s+at /;

/** An app with one tool and the table it writes declared. */
const VALID = {
  'tool.ts': CONTACT_TOOL,
  'retrysafe.config.ts': `import { addContact } from './tool';
export default {
tools: [addContact],
services: () => ({}),
tables: { contacts: { partitionKey: { name: 'tenant', type: 'S' }, sortKey: { name: 'email', type: 'S' }, tenantAttribute: 'tenant' } },
};`,
};

describe('retrysafe dev: what a newcomer gets wrong', () => {
  it.each([
    ['no config file', {}, [], /no retrysafe\.config\.ts in .*: write one that exports default defineConfig/],
    [
      'a config that exports no tools',
      { 'retrysafe.config.ts': 'export default { tools: [], services: () => ({}) };' },
      [],
      /tools: the config exports no tools/,
    ],
    [
      'a tool whose table is not declared',
      {
        'tool.ts': CONTACT_TOOL,
        'retrysafe.config.ts': `import { addContact } from './tool';\nexport default { tools: [addContact], services: () => ({}) };`,
      },
      [],
      /tools\.add_contact\.access: names the table contacts, which the config's tables do not declare/,
    ],
    [
      'a config that does not compile',
      { 'retrysafe.config.ts': 'export default { tools: [ };' },
      [],
      /retrysafe\.config\.ts: cannot load it: /,
    ],
    ['an unknown flag', {}, ['--prot', '3000'], /Unknown option '--prot'[\s\S]*usage: retrysafe dev/],
    ['a port that is none', {}, ['--port', 'http'], /--port: "http" is not a port/],
  ])('%s: one message naming it, exit 2, no stack', async (_case, files, flags, message) => {
    const dir = app(files as Record<string, string>);

    const { code, stderr } = await retrysafe(dir, ['dev', ...flags]);

    expect(code).toBe(2);
    expect(stderr).toMatch(message);
    expect(stderr).not.toMatch(STACK);
  });

  it('a port in use: says so and how to pick another', async () => {
    const dir = app(VALID);
    const busy = createServer().listen(0, '127.0.0.1');
    await new Promise((resolve) => busy.once('listening', resolve));
    const port = (busy.address() as { port: number }).port;

    const { code, stderr } = await retrysafe(dir, ['dev', '--port', String(port)]);
    busy.close();

    expect(code).toBe(2);
    expect(stderr).toMatch(new RegExp(`port ${port} is in use: stop what listens there, or pass --port N`));
    expect(stderr).not.toMatch(STACK);
  });

  it('Java missing: says how to install it, or how to do without', async () => {
    const dir = app(VALID);
    const { DYNAMODB_ENDPOINT: _none, ...env } = process.env;

    const { code, stderr } = await run(process.execPath, [...NODE, 'dev', '--port', '0'], {
      cwd: dir,
      env: { ...env, PATH: '/nonexistent' },
    }).then(
      () => ({ code: 0, stderr: '' }),
      (error: { code: number; stderr: string }) => error,
    );

    expect(code).toBe(2);
    expect(stderr).toMatch(
      /DynamoDB Local needs Java, and `java` is not on PATH: install a Java 17\+ runtime \(Debian\/Ubuntu: apt-get install openjdk-17-jre-headless/,
    );
    expect(stderr).not.toMatch(STACK);
  });
});

describe('retrysafe dev --watch', () => {
  let dev: ChildProcess | undefined;
  afterEach(() => {
    if (dev && dev.exitCode === null) dev.kill('SIGKILL');
  });

  it('reloads the tools on a change, on the same port, with its data and tokens still good', async () => {
    const dir = app({ ...VALID, 'tool.ts': CONTACT_TOOL.replace("'Add a contact.'", "'Add a contact (v1).'") });
    const env = { ...process.env, DEV_KEY_DIR: join(dir, '.local'), POWERTOOLS_LOG_LEVEL: 'WARN' };
    dev = spawn(process.execPath, [...NODE, 'dev', '--watch', '--port', '0'], { cwd: dir, env });
    let output = '';
    const printed = (pattern: RegExp) =>
      new Promise<RegExpExecArray>((resolve, reject) => {
        const look = () => {
          const found = pattern.exec(output);
          if (found) resolve(found);
        };
        dev!.stdout!.on('data', (chunk: Buffer) => {
          output += chunk.toString();
          look();
        });
        dev!.once('exit', (code) => reject(new Error(`exited with ${code}: ${output}`)));
        look();
      });
    const url = (await printed(/REST {2}(http:\/\/127\.0\.0\.1:\d+)\/tools/))[1]!;
    await printed(/Ctrl-C/);
    const port = new URL(url).port;
    const { stdout: token } = await run(
      process.execPath,
      [...NODE, 'token', '--tenant', 'w', '--user', 'u', '--port', port],
      { cwd: dir, env },
    );
    const call = () =>
      fetch(`${url}/tools/add_contact`, {
        method: 'POST',
        headers: { authorization: `Bearer ${token.trim()}`, 'content-type': 'application/json' },
        body: JSON.stringify({ idempotency_key: 'k1', email: 'ada@example.com' }),
      }).then((response) => response.json() as Promise<{ idempotent?: boolean }>);
    const listed = () =>
      fetch(`${url}/tools`, { headers: { authorization: `Bearer ${token.trim()}` } }).then((response) =>
        response.text(),
      );

    const first = await call();
    const before = await listed();
    writeFileSync(join(dir, 'tool.ts'), CONTACT_TOOL.replace("'Add a contact.'", "'Add a contact (v2).'"));
    await printed(/reloaded in \d+ ms: add_contact/);
    const after = await listed();
    const replay = await call();

    expect(before).toContain('(v1)');
    expect(after).toContain('(v2)');
    expect([first.idempotent, replay.idempotent]).toEqual([false, true]);
    const exited = new Promise((resolve) => dev!.once('exit', resolve));
    dev.kill('SIGINT');
    expect(await exited).toBe(0);
  }, 90_000);
});

describe('retrysafe types', () => {
  it("prints the app's tools' types as plain TypeScript, and refuses a name that is no type name", async () => {
    const dir = app(VALID);

    const printed = await retrysafe(dir, ['types']);
    const refused = await retrysafe(dir, ['types', '--name', 'app-tools']);

    expect(printed.code).toBe(0);
    expect(printed.stdout).toContain("import type { ToolTypes } from 'retrysafe/client';");
    expect(printed.stdout).toMatch(
      /export type AppTools = \{\n {2}\/\*\* Add a contact\. \*\/\n {2}readonly add_contact: ToolTypes<\n {4}\{\n {6}email: string;/,
    );
    expect(printed.stdout).not.toMatch(/from 'zod/);
    expect(refused).toMatchObject({ code: 2, stderr: expect.stringMatching(/--name: "app-tools" is not a type name/) });
  });
});

describe('retrysafe types --out', () => {
  it('writes the file (its folder too) and says what it wrote, where, and from which config', async () => {
    const dir = app(VALID);

    const written = await retrysafe(dir, ['types', '--out', 'agent/tools.ts']);

    expect(written).toMatchObject({ code: 0, stderr: '' });
    expect(written.stdout).toBe(
      'retrysafe types: wrote AppTools (1 tool(s): add_contact) to agent/tools.ts, from retrysafe.config.ts\n',
    );
    expect(readFileSync(join(dir, 'agent', 'tools.ts'), 'utf8')).toMatch(/readonly add_contact: ToolTypes</);
  });
});

describe('retrysafe init', () => {
  it('writes the skeleton into an empty directory, and never into one with files unless told, nor over a file', async () => {
    const parent = app({ 'retrysafe.tgz': '' });
    const written = await retrysafe(parent, ['init', 'notes-app', '--retrysafe', 'file:retrysafe.tgz']);
    const again = await retrysafe(parent, ['init', 'notes-app', '--retrysafe', 'file:retrysafe.tgz']);
    const forced = await retrysafe(parent, ['init', 'notes-app', '--retrysafe', 'file:retrysafe.tgz', '--force']);
    const badName = await retrysafe(parent, ['init', 'other', '--name', 'Notes App']);

    expect(written).toMatchObject({ code: 0, stdout: expect.stringContaining('cd notes-app\n  npm install') });
    const manifest = JSON.parse(readFileSync(join(parent, 'notes-app', 'package.json'), 'utf8'));
    expect(manifest).toMatchObject({ name: 'notes-app', dependencies: { retrysafe: expect.any(String) } });
    expect(again).toMatchObject({
      code: 2,
      stderr: expect.stringMatching(/is not empty: init writes into an empty directory/),
    });
    expect(forced).toMatchObject({
      code: 2,
      stderr: expect.stringMatching(/package\.json, .* already exist in .*: init never overwrites a file/),
    });
    expect(badName).toMatchObject({
      code: 2,
      stderr: expect.stringMatching(/--name: "Notes App" is not an npm package name/),
    });
    for (const result of [again, forced, badName]) expect(result.stderr).not.toMatch(STACK);
  });

  it("writes --retrysafe file:PATH absolute (npm resolves it from the new app's folder), and says so", async () => {
    const parent = app({ 'retrysafe.tgz': '' });

    const written = await retrysafe(parent, ['init', 'notes-app', '--retrysafe', 'file:retrysafe.tgz']);

    const manifest = JSON.parse(readFileSync(join(parent, 'notes-app', 'package.json'), 'utf8'));
    expect(manifest.dependencies.retrysafe).toBe(`file:${join(parent, 'retrysafe.tgz')}`);
    expect(written.stdout).toContain(
      `package.json depends on "retrysafe": "file:${join(parent, 'retrysafe.tgz')}" (--retrysafe).`,
    );
  });

  it.each([
    [['--retrysafe', 'file:missing.tgz'], /--retrysafe: no file .*missing\.tgz \(from file:missing\.tgz\)/],
    // Run from this checkout, as a user runs it from a clone: no spec installs a working copy as a package.
    [[], /--retrysafe is required here: this retrysafe runs from a checkout .*npm run build && npm pack/],
  ])('%j: refuses before writing anything, naming --retrysafe, exit 2', async (flags, message) => {
    const parent = app({});

    const refused = await retrysafe(parent, ['init', 'notes-app', ...flags]);

    expect(refused).toMatchObject({ code: 2, stderr: expect.stringMatching(message) });
    expect(refused.stderr).not.toMatch(STACK);
    expect(existsSync(join(parent, 'notes-app'))).toBe(false);
  });
});
