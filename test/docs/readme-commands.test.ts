/**
 * The shell blocks README.md and docs/*.md show a user to paste against `npm start`'s server, run against
 * that server (started as package.json's `start` script starts it), their output compared with the output the docs show.
 *
 * The convention, in the Markdown:
 * - A fenced ```bash block whose fence line comes right after the line `<!-- runs-in-ci -->` (blank lines
 *   between allowed) is runnable.
 * - Its shown output is the next fenced block when that is a ```json or ```text block with only blank
 *   lines before it; a runnable block without one must print nothing.
 * - The runnable blocks of one file run in order in one bash session, as pasted into one terminal: a
 *   variable one block sets (`INVOICE=$(… | jq -r .receipt.invoice_id)`) is there in the next. The session
 *   starts in the repository's root with `PORT` set to the test server's port and `TOKEN` to a token for
 *   `--tenant acme --user ada`, the one the README's session mints; a block may mint its own.
 * - The one rewrite: `localhost:3000` and `127.0.0.1:3000` in a block become the test server's port, since
 *   3000 may be taken on a shared machine (`npm run -s token` reads `PORT` itself).
 * - A ```bash or ```sh block that curls `localhost` or `127.0.0.1` must be runnable, or say why not with
 *   `<!-- not-in-ci: <reason> -->` before its fence: a new session cannot slip in untested.
 *
 * The comparison, item by item (blank lines do not count): an HTTP status line (`curl -i`) with its
 * headers, a JSON value (one line or several, as `jq .` prints), or a line of text.
 * - JSON values are compared as values (key order does not matter), with exactly the keys shown.
 * - A status line is compared exactly; the headers shown must be there with the values shown, and the
 *   headers not shown (`date`, `content-length`, `connection`, …) are not compared.
 * - What legitimately varies between runs — timestamps, request ids, random ids — is written `…` in the
 *   shown output: a JSON value `"…"` matches any value, and a `…` inside a string or a text line matches
 *   any run of characters. Everything else, the ids derived from keys included, must be equal.
 * - Each block must exit 0 and write nothing to stderr.
 *
 * `jq` must be installed (CI installs it): without it the test fails, it does not skip.
 */
import { type ChildProcess, execFile, execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { promisify } from 'node:util';
import { freePort } from '../../lib/local/free-port';

const run = promisify(execFile);
const ROOT = join(__dirname, '..', '..');
const RUNNABLE = '<!-- runs-in-ci -->';
const NOT_IN_CI = /^<!-- not-in-ci: .+ -->$/;

/** One fenced block of a Markdown file. */
interface Fence {
  readonly lang: string;
  readonly body: string;
  /** 1-based line of the opening fence. */
  readonly line: number;
  /** The nearest non-blank line before the fence. */
  readonly before: string;
  /** Whether only blank lines separate this block from the previous one. */
  readonly followsPrevious: boolean;
}

/** A runnable block and the output its file shows for it. */
interface Runnable {
  readonly file: string;
  readonly line: number;
  readonly script: string;
  readonly shown: string;
}

function fencesOf(markdown: string): Fence[] {
  const lines = markdown.split('\n');
  const fences: Fence[] = [];
  let lastClose = -2;
  for (let i = 0; i < lines.length; i++) {
    const open = /^```(\S*)\s*$/.exec(lines[i]);
    if (!open) continue;
    const start = i;
    let end = i + 1;
    while (end < lines.length && !/^```\s*$/.test(lines[end])) end++;
    let previous = start - 1;
    while (previous >= 0 && lines[previous].trim() === '') previous--;
    fences.push({
      lang: open[1],
      body: lines.slice(start + 1, end).join('\n'),
      line: start + 1,
      before: previous >= 0 ? lines[previous].trim() : '',
      followsPrevious: previous === lastClose,
    });
    lastClose = end;
    i = end;
  }
  return fences;
}

/** README.md and every Markdown file in docs/ (docs/state-machine.md included: it is read, not edited). */
function documents(): string[] {
  const docs = readdirSync(join(ROOT, 'docs'))
    .filter((name) => name.endsWith('.md'))
    .sort()
    .map((name) => join(ROOT, 'docs', name));
  return [join(ROOT, 'README.md'), ...docs];
}

function runnablesOf(file: string): Runnable[] {
  const fences = fencesOf(readFileSync(file, 'utf8'));
  const runnables: Runnable[] = [];
  fences.forEach((fence, index) => {
    if (fence.before !== RUNNABLE) return;
    if (fence.lang !== 'bash') throw new Error(`${file}:${fence.line}: ${RUNNABLE} marks a \`${fence.lang}\` block`);
    const next = fences[index + 1];
    const shown = next?.followsPrevious && (next.lang === 'json' || next.lang === 'text') ? next.body : '';
    runnables.push({ file: relative(ROOT, file), line: fence.line, script: fence.body, shown });
  });
  return runnables;
}

/** Shell blocks that talk to a local server but are neither runnable nor excused. */
function unmarkedLocalBlocks(file: string): string[] {
  return fencesOf(readFileSync(file, 'utf8'))
    .filter((fence) => fence.lang === 'bash' || fence.lang === 'sh')
    .filter((fence) => /curl[^\n]*(localhost|127\.0\.0\.1)/.test(fence.body))
    .filter((fence) => fence.before !== RUNNABLE && !NOT_IN_CI.test(fence.before))
    .map((fence) => `${relative(ROOT, file)}:${fence.line}`);
}

type Item =
  | { readonly kind: 'status'; readonly line: string; readonly headers: Record<string, string> }
  | { readonly kind: 'json'; readonly value: unknown }
  | { readonly kind: 'text'; readonly line: string };

/** An output as items: HTTP status lines with their headers, JSON values, other lines. */
function itemsOf(output: string): Item[] {
  const lines = output.replace(/\r/g, '').split('\n');
  const items: Item[] = [];
  let i = 0;
  while (i < lines.length) {
    const line = lines[i];
    if (line.trim() === '') {
      i++;
    } else if (/^HTTP\/[\d.]+ \d{3}/.test(line)) {
      const headers: Record<string, string> = {};
      for (i++; i < lines.length && /^[\w-]+: /.test(lines[i]); i++) {
        const colon = lines[i].indexOf(': ');
        headers[lines[i].slice(0, colon).toLowerCase()] = lines[i].slice(colon + 2).trim();
      }
      items.push({ kind: 'status', line: line.trim(), headers });
    } else {
      const json = jsonAt(lines, i);
      if (json) {
        items.push({ kind: 'json', value: json.value });
        i = json.next;
      } else {
        items.push({ kind: 'text', line: line.trimEnd() });
        i++;
      }
    }
  }
  return items;
}

/** The shortest run of lines from `start` that parses as one JSON object or array. */
function jsonAt(lines: string[], start: number): { value: unknown; next: number } | undefined {
  if (!/^\s*[[{]/.test(lines[start])) return undefined;
  for (let end = start; end < lines.length; end++) {
    try {
      return { value: JSON.parse(lines.slice(start, end + 1).join('\n')), next: end + 1 };
    } catch {
      // not complete yet
    }
  }
  return undefined;
}

const ANY = '…';

function wildcardMatches(shown: string, actual: string): boolean {
  const pattern = shown
    .split(ANY)
    .map((part) => part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'))
    .join('[\\s\\S]*');
  return new RegExp(`^${pattern}$`).test(actual);
}

/**
 * The actual value as the docs would show it: what `…` stands for replaced by the shown text. Equal to
 * the shown value exactly when the output matches, and otherwise a readable diff against it.
 */
function asShown(shown: unknown, actual: unknown): unknown {
  if (shown === ANY) return ANY;
  if (typeof shown === 'string' && typeof actual === 'string') {
    return shown.includes(ANY) && wildcardMatches(shown, actual) ? shown : actual;
  }
  if (Array.isArray(shown) && Array.isArray(actual)) {
    return actual.map((value, index) => (index < shown.length ? asShown(shown[index], value) : value));
  }
  if (isObject(shown) && isObject(actual)) {
    return Object.fromEntries(
      Object.entries(actual).map(([key, value]) => [key, key in shown ? asShown(shown[key], value) : value]),
    );
  }
  return actual;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function itemsAsShown(shown: Item[], actual: Item[]): Item[] {
  return actual.map((item, index) => {
    const want = shown[index];
    if (!want || want.kind !== item.kind) return item;
    if (item.kind === 'json' && want.kind === 'json') return { kind: 'json', value: asShown(want.value, item.value) };
    if (item.kind === 'text' && want.kind === 'text')
      return { kind: 'text', line: asShown(want.line, item.line) as string };
    if (item.kind === 'status' && want.kind === 'status') {
      // Only the headers shown are compared.
      const headers = Object.fromEntries(
        Object.keys(want.headers)
          .filter((name) => name in item.headers)
          .map((name) => [name, asShown(want.headers[name], item.headers[name]) as string]),
      );
      return { kind: 'status', line: asShown(want.line, item.line) as string, headers };
    }
    return item;
  });
}

/** What one block did in the session. */
interface Ran {
  readonly stdout: string;
  readonly stderr: string;
  readonly status: number;
}

/**
 * One bash session, as one terminal: each block is sourced in the same shell, its output captured in
 * files, and a line on stdout says it is done (the test waits on that line, not on a timer).
 */
class BashSession {
  private readonly shell: ChildProcess;
  private readonly dir = mkdtempSync(join(tmpdir(), 'retrysafe-readme-'));
  private buffered = '';
  private waiting: { marker: string; resolve: () => void } | undefined;
  private count = 0;
  private exited: Error | undefined;

  constructor(env: NodeJS.ProcessEnv) {
    this.shell = spawn('bash', ['--noprofile', '--norc'], { cwd: ROOT, env, stdio: ['pipe', 'pipe', 'inherit'] });
    this.shell.stdout?.on('data', (chunk: Buffer) => {
      this.buffered += chunk.toString();
      this.settle();
    });
    this.shell.once('exit', (code) => {
      this.exited = new Error(`bash exited with ${code}`);
      this.settle();
    });
  }

  private settle(): void {
    if (this.waiting && (this.exited || this.buffered.includes(this.waiting.marker))) this.waiting.resolve();
  }

  async run(script: string): Promise<Ran> {
    const n = ++this.count;
    const file = (name: string) => join(this.dir, `${n}.${name}`);
    writeFileSync(file('sh'), `${script}\n`);
    const marker = `__block_${n}_done__`;
    const done = new Promise<void>((resolve) => {
      this.waiting = { marker, resolve };
    });
    this.shell.stdin?.write(
      `source ${file('sh')} > ${file('out')} 2> ${file('err')} < /dev/null; echo $? > ${file('rc')}; echo ${marker}\n`,
    );
    this.settle();
    await done;
    this.waiting = undefined;
    if (this.exited) throw this.exited;
    return {
      stdout: readFileSync(file('out'), 'utf8'),
      stderr: readFileSync(file('err'), 'utf8'),
      status: Number(readFileSync(file('rc'), 'utf8').trim()),
    };
  }

  close(): void {
    this.shell.stdin?.end();
    if (this.shell.exitCode === null) this.shell.kill();
  }
}

/**
 * How `npm run <name>` runs its program, as a Node process of its own (no npm in between, so Ctrl-C reaches
 * the server itself): package.json's script, which must be `tsx <file> [args…]`. Read from package.json
 * rather than named here, so the test follows `npm start` when its program changes.
 */
function scriptCommand(name: string): string[] {
  const manifest = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { scripts: Record<string, string> };
  const words = (manifest.scripts[name] ?? '').split(/\s+/).filter(Boolean);
  if (words[0] !== 'tsx' || words.length < 2) {
    throw new Error(`package.json's "${name}" script is not \`tsx <file> [args]\`: teach this test how to start it`);
  }
  return ['--import', 'tsx', ...words.slice(1)];
}

/** `npm start` on `port`; resolves once it printed its URL and answers `GET /health`. */
function startServer(env: NodeJS.ProcessEnv, port: string): { server: ChildProcess; ready: Promise<void> } {
  const server = spawn(process.execPath, scriptCommand('start'), { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  const url = `http://127.0.0.1:${port}`;
  const printed = new Promise<void>((resolve, reject) => {
    const read = (chunk: Buffer) => {
      output += chunk.toString();
      if (output.includes(url)) resolve();
    };
    server.stdout?.on('data', read);
    server.stderr?.on('data', (chunk: Buffer) => {
      output += chunk.toString();
    });
    server.once('exit', (code) => reject(new Error(`npm start exited with ${code}: ${output}`)));
  });
  const ready = printed.then(async () => {
    const health = await fetch(`${url}/health`);
    if (health.status !== 200) throw new Error(`GET /health answered ${health.status}: ${output}`);
  });
  return { server, ready };
}

const files = documents();
const runnables = files.map((file) => ({ file: relative(ROOT, file), blocks: runnablesOf(file) }));

describe('the docs’ shell blocks', () => {
  it('mark every block that curls the local server as runnable (or say why not)', () => {
    // prepare, act
    const unmarked = files.flatMap(unmarkedLocalBlocks);

    // assess
    expect(unmarked).toEqual([]);
    expect(runnables.find(({ file }) => file === 'README.md')?.blocks.length).toBeGreaterThan(0);
  });
});

describe.each(runnables.filter(({ blocks }) => blocks.length > 0))('$file, pasted against npm start', ({ blocks }) => {
  let server: ChildProcess | undefined;
  let session: BashSession;
  let port: string;

  beforeAll(async () => {
    // jq is part of the commands shown; without it every captured id is empty and a block could
    // still print something plausible — so its absence is a failure, never a skip.
    try {
      execFileSync('sh', ['-c', 'command -v jq'], { stdio: 'ignore' });
    } catch {
      throw new Error('jq is not installed: the docs’ commands need it (apt-get install -y jq)');
    }
    // Its own DynamoDB Local and its own dev key, as on a fresh checkout.
    const { DYNAMODB_ENDPOINT: _shared, ...baseEnv } = process.env;
    port = String(await freePort());
    const env = { ...baseEnv, PORT: port, DEV_KEY_DIR: mkdtempSync(join(tmpdir(), 'retrysafe-readme-key-')) };
    const started = startServer(env, port);
    server = started.server;
    await started.ready;
    const { stdout: token } = await run(
      process.execPath,
      [...scriptCommand('token'), '--tenant', 'acme', '--user', 'ada'],
      {
        cwd: ROOT,
        env,
      },
    );
    session = new BashSession({ ...env, TOKEN: token.trim() });
  }, 90_000);

  afterAll(async () => {
    session?.close();
    if (server && server.exitCode === null) {
      const stopped = new Promise((resolve) => server?.once('exit', resolve));
      server.kill('SIGINT'); // Ctrl-C: it stops DynamoDB Local too
      await stopped;
    }
  }, 30_000);

  it.each(blocks.map((block) => [`${block.file}:${block.line}`, block] as const))(
    'the block at %s prints what the docs show',
    async (_where, block) => {
      // prepare
      const script = block.script.replace(/\b(localhost|127\.0\.0\.1):3000\b/g, `$1:${port}`);

      // act
      const ran = await session.run(script);

      // assess
      const shown = itemsOf(block.shown);
      expect({ status: ran.status, stderr: ran.stderr }).toEqual({ status: 0, stderr: '' });
      expect(itemsAsShown(shown, itemsOf(ran.stdout))).toEqual(shown);
    },
    30_000,
  );
});
