import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { GaveUpError, RetrysafeClient } from '../../lib/client';
import { freePort } from '../../lib/local/free-port';

/** A request as the fake server saw it: when it arrived and what it carried. */
interface Arrival {
  readonly at: number;
  readonly body: string;
}

type Answer = (response: ServerResponse, arrival: Arrival) => void;

/**
 * A tiny HTTP server that answers each request with the next scripted answer (the last one repeats):
 * the failures the local API does not make on demand — a gateway's 503, 502, 429; a hang.
 */
async function fakeServer(...answers: Answer[]) {
  const arrivals: Arrival[] = [];
  const server: Server = createServer(function scripted(request: IncomingMessage, response: ServerResponse) {
    let body = '';
    request.on('data', (chunk: Buffer) => {
      body += chunk.toString('utf8');
    });
    request.on('end', () => {
      const arrival = { at: Date.now(), body };
      arrivals.push(arrival);
      answers[Math.min(arrivals.length, answers.length) - 1]!(response, arrival);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  return {
    url: `http://127.0.0.1:${port}`,
    arrivals,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

function status(code: number, body: unknown, headers: Record<string, string> = {}): Answer {
  return function answerWith(response) {
    response.writeHead(code, { 'content-type': 'application/json', ...headers });
    response.end(JSON.stringify(body));
  };
}

function receipt(response: ServerResponse, arrival: Arrival) {
  const key = JSON.parse(arrival.body).idempotency_key;
  status(200, { ok: true, idempotent: false, key, receipt: { invoice_id: 'inv_1' } })(response, arrival);
}

const unavailable = { ok: false, error: { code: 'unavailable', message: 'the store is unavailable; retry' } };

/**
 * How late past its deadline a give-up may come on a loaded 2-core machine (timers and sockets share
 * it with DynamoDB Local and other suites). A client that ignored the deadline would run to its 30 s
 * default, far beyond.
 */
const SLACK_MS = 1_000;

let server: Awaited<ReturnType<typeof fakeServer>> | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

function clientAt(url: string, deadlineMs = 10_000) {
  return new RetrysafeClient({ baseUrl: url, token: 't', deadlineMs, retry: { baseDelayMs: 10, maxDelayMs: 50 } });
}

describe('RetrysafeClient against transient failures', () => {
  it('retries a 503 no earlier than its Retry-After, with the same key', async () => {
    // Prepare
    server = await fakeServer(status(503, unavailable, { 'retry-after': '1' }), receipt);

    // Act
    const answer = await clientAt(server.url).call('create_invoice', { customer: 'c', amount: 1 }, { key: 'k1' });

    // Assess
    const [first, second] = server.arrivals;
    expect(server.arrivals).toHaveLength(2);
    expect(second!.at - first!.at).toBeGreaterThanOrEqual(1_000);
    expect([first, second].map((arrival) => JSON.parse(arrival!.body).idempotency_key)).toEqual(['k1', 'k1']);
    expect(answer).toMatchObject({ ok: true, key: 'k1', receipt: { invoice_id: 'inv_1' } });
  });

  it.each([
    ['429 (throttled by the gateway)', 429, { message: 'Too Many Requests' }],
    ['502 (bad gateway)', 502, { message: 'Bad Gateway' }],
    ['504 (the function timed out)', 504, { ok: false, error: { code: 'timeout', message: 'deadline' } }],
    ['500 from the gateway, not from retrysafe (a crashed function)', 500, { message: 'Internal Server Error' }],
  ])('retries a %s', async (_label, code, body) => {
    server = await fakeServer(status(code, body), status(code, body), receipt);

    const answer = await clientAt(server.url).call('create_invoice', { customer: 'c', amount: 1 }, { key: 'k1' });

    expect(server.arrivals).toHaveLength(3);
    expect(answer.key).toBe('k1');
  });

  it('gives up at the deadline when every answer is a 503, and says so with the key', async () => {
    // Prepare
    server = await fakeServer(status(503, unavailable));
    const deadlineMs = 800;

    // Act
    const started = Date.now();
    const error = await clientAt(server.url, deadlineMs)
      .call('create_invoice', { customer: 'c', amount: 1 }, { key: 'k1' })
      .catch((e: unknown) => e);
    const elapsed = Date.now() - started;

    // Assess
    expect(error).toBeInstanceOf(GaveUpError);
    expect(error).toMatchObject({ key: 'k1', last: 'unavailable', attempts: server.arrivals.length });
    expect((error as GaveUpError).message).toMatch(
      /gave up after \d+ attempt\(s\).*operation\("create_invoice", "k1"\)/,
    );
    expect(server.arrivals.length).toBeGreaterThan(3);
    expect(elapsed).toBeLessThanOrEqual(deadlineMs + SLACK_MS);
  });

  it('cuts a request that hangs at the deadline', async () => {
    // Prepare: a server that reads the request and never answers
    server = await fakeServer(function hang() {
      // no answer: the client's deadline must end the wait
    });

    // Act
    const started = Date.now();
    const error = await clientAt(server.url, 500)
      .call('create_invoice', { customer: 'c', amount: 1 }, { key: 'k1' })
      .catch((e: unknown) => e);
    const elapsed = Date.now() - started;

    // Assess
    expect(error).toMatchObject({ name: 'GaveUpError', key: 'k1', last: 'timeout', attempts: 1 });
    expect(elapsed).toBeGreaterThanOrEqual(450);
    expect(elapsed).toBeLessThanOrEqual(500 + SLACK_MS);
  });

  it('retries a refused connection until the deadline, as a network loss', async () => {
    const nobody = `http://127.0.0.1:${await freePort()}`;

    const error = await clientAt(nobody, 300)
      .call('create_invoice', { customer: 'c', amount: 1 }, { key: 'k1' })
      .catch((e: unknown) => e);

    expect(error).toMatchObject({ name: 'GaveUpError', key: 'k1', last: 'network' });
    expect((error as GaveUpError).attempts).toBeGreaterThan(1);
  });
});
