import { createHash } from 'node:crypto';
import { createServer, type Socket } from 'node:net';
import { join } from 'node:path';
import { build, type Metafile } from 'esbuild';
import { HTTP_STATUS } from '../../lib/api/status';
import {
  GaveUpError,
  isValidKey,
  keyForToolCall,
  RetrysafeClient,
  ToolCallError,
  UnexpectedAnswerError,
} from '../../lib/client';
import { backoffDelay, isNetworkError, retryAfterHeaderMs } from '../../lib/client/retry';
import type { Completed, FetchLike, JsonObject, Operation } from '../../lib/client/types';
import { clientKeySchema, type ToolResult } from '../../lib/idempotency/definition';
import { PACKAGE_ENTRIES, PACKAGE_SUBPATHS } from '../../lib/package-entries';
import type { readOperation } from '../../lib/reads/operation';
import packageJson from '../../package.json';

const ROOT = join(__dirname, '..', '..');

/** A `fetch` that answers from a script and records what was sent: the client without a network. */
function scriptedFetch(...answers: Array<{ status: number; body?: unknown; headers?: Record<string, string> }>) {
  const sent: Array<{ url: string; init: RequestInit }> = [];
  const fetch: FetchLike = async function scripted(url, init) {
    sent.push({ url, init });
    const answer = answers[Math.min(sent.length, answers.length) - 1]!;
    const text = typeof answer.body === 'string' ? answer.body : JSON.stringify(answer.body ?? '');
    return new Response(text, { status: answer.status, headers: answer.headers });
  };
  return { fetch, sent };
}

function completed(key: string): JsonObject {
  return { ok: true, idempotent: false, key, receipt: { id: 'r1' } };
}

describe('backoffDelay (full jitter)', () => {
  const backoff = { baseDelayMs: 100, maxDelayMs: 2_000 };

  it.each([
    [0, 0.5, 50],
    [1, 0.5, 100],
    [3, 0.5, 400],
    [10, 0.5, 1_000], // the ceiling stops doubling at maxDelayMs
    [3, 0, 0],
    [3, 0.999, 799],
  ])('draws retry %i with random %d below the doubled ceiling: %i ms', (retry, random, expected) => {
    expect(backoffDelay(retry, backoff, undefined, () => random)).toBe(expected);
  });

  it("never comes back before the server's hint, and still jitters above it", () => {
    expect(backoffDelay(0, backoff, 1_000, () => 0.9)).toBe(1_000);
    expect(backoffDelay(5, backoff, 300, () => 0.5)).toBe(1_000);
  });
});

describe('retryAfterHeaderMs', () => {
  const now = Date.parse('2026-01-01T00:00:00Z');

  it.each([
    ['delay-seconds', '2', 2_000],
    ['zero', '0', 0],
    ['an HTTP-date', 'Thu, 01 Jan 2026 00:00:03 GMT', 3_000],
    ['a date in the past', 'Wed, 31 Dec 2025 23:59:00 GMT', 0],
    ['garbage', 'soon', undefined],
    ['no header', null, undefined],
  ])('reads %s', (_label, header, expected) => {
    expect(retryAfterHeaderMs(header, now)).toBe(expected);
  });
});

/** What Node's fetch really rejects with when a server does `behaviour` to the socket. */
async function realFetchFailure(behaviour: (socket: Socket) => void, readBody = false): Promise<unknown> {
  const server = createServer((socket) => socket.once('data', () => behaviour(socket)));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  try {
    const response = await fetch(`http://127.0.0.1:${port}/`, { method: 'POST', body: '{}' });
    if (readBody) await response.text();
    return undefined;
  } catch (error) {
    return error;
  } finally {
    server.close();
  }
}

describe('isNetworkError', () => {
  it.each([
    ['a socket closed before the answer (undici "other side closed")', (s: Socket) => s.destroy(), false],
    ['a reset connection (ECONNRESET)', (s: Socket) => s.resetAndDestroy(), false],
    [
      'a body cut short ("terminated")',
      (s: Socket) => {
        s.write('HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 100\r\n\r\n{"ok":');
        setImmediate(() => s.destroy());
      },
      true,
    ],
  ])('is true for what fetch really throws on %s', async (_label, behaviour, readBody) => {
    const error = await realFetchFailure(behaviour, readBody);

    // Node's own TypeError, from outside Jest's sandbox: not `instanceof` this realm's Error.
    expect(error).toMatchObject({ message: expect.stringMatching(/^(fetch failed|terminated)$/) });
    expect(isNetworkError(error)).toBe(true);
  });

  it.each([
    ['a refused connection', Object.assign(new TypeError('fetch failed'), { cause: { code: 'ECONNREFUSED' } })],
    [
      'a cause nested twice',
      Object.assign(new TypeError('fetch failed'), { cause: new Error('x', { cause: { code: 'EPIPE' } }) }),
    ],
  ])('is true for %s', (_label, error) => {
    expect(isNetworkError(error)).toBe(true);
  });

  it.each([
    ['a bad URL', new TypeError('Failed to parse URL from nope')],
    ['an abort', new DOMException('This operation was aborted', 'AbortError')],
    [
      'a refused certificate',
      Object.assign(new TypeError('fetch failed'), {
        cause: { code: 'CERT_HAS_EXPIRED', message: 'certificate has expired' },
      }),
    ],
    ['a bug', new RangeError('Maximum call stack size exceeded')],
    ['not an error', 'ECONNRESET'],
  ])('is false for %s: not retried', (_label, error) => {
    expect(isNetworkError(error)).toBe(false);
  });
});

describe('keys', () => {
  it.each([
    'k',
    'call_abc123',
    ' spaced ~ key ',
    'x'.repeat(255),
    '',
    'x'.repeat(256),
    'caf\u00e9',
    'tab\there',
    'line\n',
  ])('accepts %j exactly when the server does', (key) => {
    expect(isValidKey(key)).toBe(clientKeySchema.safeParse(key).success);
  });

  it('keeps a tool-call id that is already a valid key', async () => {
    expect(await keyForToolCall('toolu_01A09q90qw90lq917835lq9')).toBe('toolu_01A09q90qw90lq917835lq9');
  });

  it.each([
    ['non-ASCII', 'appel-\u00e9t\u00e9'],
    ['too long', 'c'.repeat(300)],
  ])('hashes a %s tool-call id to tc_<sha256>, the same every time', async (_label, id) => {
    const first = await keyForToolCall(id);
    const again = await keyForToolCall(id);

    expect(first).toBe(`tc_${createHash('sha256').update(id, 'utf8').digest('hex')}`);
    expect(again).toBe(first);
    expect(isValidKey(first)).toBe(true);
  });

  it('refuses an empty tool-call id: no stable intent can come from it', async () => {
    await expect(keyForToolCall('')).rejects.toThrow(/toolCallId/);
  });
});

describe('RetrysafeClient, against a scripted fetch', () => {
  it('reports every problem with its options at once', () => {
    expect(
      () =>
        new RetrysafeClient({ baseUrl: 'not a url', deadlineMs: -1, token: '' } as unknown as ConstructorParameters<
          typeof RetrysafeClient
        >[0]),
    ).toThrow(/baseUrl: .*; token or getToken: exactly one is required; deadlineMs: must be a number > 0/);
  });

  it('sends the arguments flat with the key, a bearer token from getToken on every attempt, and no other key', async () => {
    const { fetch, sent } = scriptedFetch(
      { status: 503, headers: { 'retry-after': '0' } },
      { status: 200, body: completed('k1') },
    );
    let tokens = 0;
    const client = new RetrysafeClient({
      baseUrl: 'http://api.test/',
      fetch,
      getToken: () => `token-${++tokens}`,
      retry: { baseDelayMs: 1, maxDelayMs: 1 },
    });

    await client.call('create_invoice', { customer: 'c', amount: 1 }, { key: 'k1' });

    expect(sent.map(({ url }) => url)).toEqual([
      'http://api.test/tools/create_invoice',
      'http://api.test/tools/create_invoice',
    ]);
    expect(sent.map(({ init }) => JSON.parse(init.body as string))).toEqual([
      { customer: 'c', amount: 1, idempotency_key: 'k1' },
      { customer: 'c', amount: 1, idempotency_key: 'k1' },
    ]);
    expect(sent.map(({ init }) => (init.headers as Record<string, string>).authorization)).toEqual([
      'Bearer token-1',
      'Bearer token-2',
    ]);
  });

  it.each(Object.entries(HTTP_STATUS).filter(([, status]) => ![500, 503, 504].includes(status)))(
    "names a gateway's bare %s refusal (HTTP %i) with the server's own code, and does not retry it",
    async (code, status) => {
      const { fetch, sent } = scriptedFetch({ status, body: { message: 'from the gateway' } });
      const client = new RetrysafeClient({ baseUrl: 'http://api.test', fetch, token: 't' });

      const error = await client.call('refund', { invoice_id: 'i', amount: 1 }, { key: 'k1' }).catch((e: unknown) => e);

      expect(error).toBeInstanceOf(ToolCallError);
      expect(error).toMatchObject({ code, status, detail: 'from the gateway', key: 'k1', tool: 'refund' });
      expect(sent).toHaveLength(1);
    },
  );

  it("does not retry retrysafe's own 500 internal, but retries a gateway's 500 (a crashed function)", async () => {
    const own = scriptedFetch({
      status: 500,
      body: { ok: false, error: { code: 'internal', message: 'internal error' } },
    });
    const gateway = scriptedFetch(
      { status: 500, body: { message: 'Internal Server Error' } },
      { status: 200, body: completed('k1') },
    );
    const options = { baseUrl: 'http://api.test', token: 't', retry: { baseDelayMs: 1, maxDelayMs: 1 } };

    const refused = await new RetrysafeClient({ ...options, fetch: own.fetch })
      .call('refund', {}, { key: 'k1' })
      .catch((e: unknown) => e);
    const answer = await new RetrysafeClient({ ...options, fetch: gateway.fetch }).call('refund', {}, { key: 'k1' });

    expect(refused).toMatchObject({ name: 'ToolCallError', code: 'internal', status: 500 });
    expect(own.sent).toHaveLength(1);
    expect(answer).toEqual(completed('k1'));
    expect(gateway.sent).toHaveLength(2);
  });

  it('refuses a 200 that is not a retrysafe answer (a wrong baseUrl) without retrying', async () => {
    const { fetch, sent } = scriptedFetch({ status: 200, body: '<html>welcome</html>' });
    const client = new RetrysafeClient({ baseUrl: 'http://api.test', fetch, token: 't' });

    const error = await client.call('refund', {}, { key: 'k1' }).catch((e: unknown) => e);

    expect(error).toBeInstanceOf(UnexpectedAnswerError);
    expect((error as UnexpectedAnswerError).excerpt).toBe('<html>welcome</html>');
    expect(sent).toHaveLength(1);
  });

  it('refuses a key the server would refuse before sending anything', async () => {
    const { fetch, sent } = scriptedFetch({ status: 200, body: completed('k') });
    const client = new RetrysafeClient({ baseUrl: 'http://api.test', fetch, token: 't' });

    await expect(client.call('refund', {}, { key: 'caf\u00e9' })).rejects.toThrow(/key: must be/);
    await expect(client.call('refund', { idempotency_key: 'a' }, { key: 'b' })).rejects.toThrow(/differs/);
    expect(sent).toHaveLength(0);
  });

  it('stops at once when the caller aborts, with the abort reason', async () => {
    const { fetch, sent } = scriptedFetch({
      status: 202,
      body: { ok: false, status: 'pending', key: 'k1', retry_after_ms: 60_000 },
    });
    const client = new RetrysafeClient({ baseUrl: 'http://api.test', fetch, token: 't', deadlineMs: 120_000 });
    const controller = new AbortController();
    const reason = new Error('the user left');

    const calling = client.call('refund', {}, { key: 'k1', signal: controller.signal });
    await new Promise((resolve) => setImmediate(resolve)); // the first answer (pending) has been read
    controller.abort(reason);

    await expect(calling).rejects.toBe(reason);
    expect(sent).toHaveLength(1);
  });

  it('reads every status the operations poll answers, abandoned included', async () => {
    // Fails to compile if the server's poll answers a status the client's Operation does not know.
    type ServerStatus = Extract<Awaited<ReturnType<typeof readOperation>>, { ok: true }>['status'];
    const covered: ServerStatus extends Operation['status'] ? true : false = true;
    // And if it answers a field the client's Operation does not name (`runs_anew`, `queued`, `hint`, …).
    type ServerFields = keyof Extract<Awaited<ReturnType<typeof readOperation>>, { ok: true }>;
    type ClientFields = Operation extends infer O ? (O extends unknown ? keyof O : never) : never;
    const named: ServerFields extends ClientFields ? true : false = true;
    const abandoned = { ok: true, status: 'abandoned', key: 'k1', hint: 'the completer finishes it' };
    const { fetch, sent } = scriptedFetch({ status: 200, body: abandoned });
    const client = new RetrysafeClient({ baseUrl: 'http://api.test', fetch, token: 't' });

    const operation = await client.operation('refund', 'k 1/2');

    expect(covered).toBe(true);
    expect(named).toBe(true);
    expect(operation).toEqual(abandoned);
    expect(sent.map(({ url, init }) => [init.method, url])).toEqual([
      ['GET', 'http://api.test/tools/refund/operations/k%201%2F2'],
    ]);
  });

  it('gives up at once when the hint is past the deadline, with the key to come back with', async () => {
    const { fetch, sent } = scriptedFetch({
      status: 202,
      body: { ok: false, status: 'pending', key: 'k1', retry_after_ms: 60_000 },
    });
    const client = new RetrysafeClient({ baseUrl: 'http://api.test', fetch, token: 't', deadlineMs: 5_000 });

    const error = await client.call('refund', {}, { key: 'k1' }).catch((e: unknown) => e);

    expect(error).toBeInstanceOf(GaveUpError);
    expect(error).toMatchObject({ key: 'k1', tool: 'refund', attempts: 1, last: 'pending' });
    expect((error as GaveUpError).elapsedMs).toBeLessThan(5_000);
    expect(sent).toHaveLength(1);
  });
});

describe('the client, as a package', () => {
  it("answers a success in the server's own shape (checked by the compiler)", () => {
    // Fails to compile if the client's success answer and the server's ToolResult drift apart.
    const sameShape: [Completed<JsonObject>, Extract<ToolResult, { ok: true }>] extends [
      Extract<ToolResult, { ok: true }>,
      Completed<JsonObject>,
    ]
      ? true
      : false = true;

    expect(sameShape).toBe(true);
  });

  const WIRE_CONTRACT = 'lib/api/next-step.ts';

  it.each([
    ['./client', 'lib/client/index.ts'],
    ['./client/openai', 'lib/client/openai.ts'],
    ['./client/anthropic', 'lib/client/anthropic.ts'],
    ['./client/ai-sdk', 'lib/client/ai-sdk.ts'],
  ])(
    'exports %s, built from a file that bundles for the web platform from lib/client and the wire contract alone (no server code, no Node built-in)',
    async (subpath, file) => {
      const exports = packageJson.exports as unknown as Record<string, { import: { default: string } }>;
      const entry = PACKAGE_SUBPATHS[subpath as keyof typeof PACKAGE_SUBPATHS];

      const result = await build({
        entryPoints: [join(ROOT, file)],
        absWorkingDir: ROOT,
        bundle: true,
        platform: 'neutral',
        format: 'esm',
        write: false,
        metafile: true,
        logLevel: 'silent',
      });
      const inputs = Object.keys((result.metafile as Metafile).inputs);

      // The subpath loads the build of exactly this file.
      expect(exports[subpath]!.import.default).toBe(`./dist/${entry}.mjs`);
      expect(PACKAGE_ENTRIES[entry]).toBe(file);
      // The next steps are the one module the client shares with the server: it imports types only.
      expect(inputs.filter((input) => !input.startsWith('lib/client/') && input !== WIRE_CONTRACT)).toEqual([]);
    },
  );
});
