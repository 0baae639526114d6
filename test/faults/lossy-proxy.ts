import { createHash } from 'node:crypto';
import { createServer, type Socket, connect as tcpConnect } from 'node:net';

/** How an answer is lost: the client's socket closed (FIN: "other side closed") or reset (RST: ECONNRESET). */
export type Loss = 'close' | 'reset';

/** A request as the proxy saw it, in arrival order. */
export interface ProxiedRequest {
  /** Arrival order over the proxy's life, from 0. */
  readonly index: number;
  /** The TCP connection it came on, from 0: several requests on one connection are a pooled (keep-alive) socket. */
  readonly connection: number;
  readonly method: string;
  readonly path: string;
  /** The whole body, as text (filled in as it arrives, complete before its answer does). */
  body: string;
  /** Whether its answer was lost, and how; undefined until the answer started arriving. */
  lost?: Loss | false;
}

/** Decides, when a request's answer starts arriving, whether the client gets it. Called once per request. */
export type LossPolicy = (request: ProxiedRequest, earlier: readonly ProxiedRequest[]) => Loss | false;

export interface LossyProxy {
  /** `http://127.0.0.1:<port>`: point the client here instead of at the API. */
  readonly url: string;
  /** Every request so far, in arrival order. */
  readonly requests: readonly ProxiedRequest[];
  close(): Promise<void>;
}

/** Loses every other answer, from the first, alternating close and reset so both failure shapes are met. */
export function loseEveryOther(): LossPolicy {
  return function everyOther(request) {
    if (request.index % 2 !== 0) return false;
    return request.index % 4 === 0 ? 'close' : 'reset';
  };
}

/**
 * Loses a `share` (0–1) of all answers, chosen by a hash of the seed and the arrival index — the same
 * requests on every run with the same seed and arrival order — alternating close and reset.
 */
export function loseShare(share: number, seed: string): LossPolicy {
  if (!(share >= 0 && share <= 1)) throw new RangeError(`share: ${share} is not between 0 and 1`);
  let lost = 0;
  return function shareOfAnswers(request) {
    const draw = createHash('sha256').update(`${seed}:${request.index}`).digest().readUInt32BE(0) / 2 ** 32;
    if (draw >= share) return false;
    return lost++ % 2 === 0 ? 'close' : 'reset';
  };
}

/**
 * Loses the first `count` answers of every idempotency key (read from the JSON body), so every intent
 * meets a write whose answer never came, whatever order concurrent intents arrive in.
 */
export function loseFirstAnswersPerKey(count: number): LossPolicy {
  return function firstPerKey(request, earlier) {
    const key = keyOf(request);
    if (key === undefined) return false;
    const before = earlier.filter(function sameKey(other) {
      return other !== request && other.lost !== undefined && keyOf(other) === key;
    }).length;
    if (before >= count) return false;
    return before % 2 === 0 ? 'close' : 'reset';
  };
}

function keyOf(request: ProxiedRequest): string | undefined {
  try {
    const key = (JSON.parse(request.body) as { idempotency_key?: unknown }).idempotency_key;
    return typeof key === 'string' ? key : undefined;
  } catch {
    return undefined;
  }
}

const HEAD_END = Buffer.from('\r\n\r\n');

/**
 * A TCP proxy on a free loopback port in front of an HTTP server, that loses answers on purpose: the
 * request is forwarded whole, the server runs it, and when the answer starts arriving the policy may
 * destroy the client's socket instead of passing it on — the write happened, the answer is lost. The
 * policy decides by arrival index or body, never by chance, so a test knows what was lost.
 *
 * It reads just enough HTTP to do that: request heads (to count requests on a keep-alive connection,
 * and to rewrite `Host`, which the local API checks against its own port) and `content-length` bodies.
 * Requests on one connection are sequential (fetch does not pipeline), so the answer arriving belongs
 * to the last request seen.
 */
export async function startLossyProxy(target: string, lose: LossPolicy = () => false): Promise<LossyProxy> {
  const upstreamUrl = new URL(target);
  const requests: ProxiedRequest[] = [];
  const sockets = new Set<Socket>();
  let connections = 0;

  const server = createServer(function proxyConnection(client) {
    const connection = connections++;
    const upstream = tcpConnect(Number(upstreamUrl.port), upstreamUrl.hostname);
    sockets.add(client).add(upstream);
    // Either side may die first (that is the point); the other one is then closed, never left half open.
    client.on('error', () => upstream.destroy());
    upstream.on('error', () => client.destroy());
    client.on('close', () => {
      sockets.delete(client);
      upstream.destroy();
    });
    upstream.on('close', () => {
      sockets.delete(upstream);
      client.destroy();
    });

    let pending = Buffer.alloc(0);
    let bodyLeft = 0;
    let bodyParts: Buffer[] = [];
    let current: ProxiedRequest | undefined;

    function forwardRequests(chunk: Buffer) {
      pending = Buffer.concat([pending, chunk]);
      for (;;) {
        if (bodyLeft > 0) {
          const part = pending.subarray(0, bodyLeft);
          pending = pending.subarray(part.length);
          bodyLeft -= part.length;
          bodyParts.push(part);
          upstream.write(part);
          if (bodyLeft > 0) return;
          if (current) current.body = Buffer.concat(bodyParts).toString('utf8');
          continue;
        }
        const end = pending.indexOf(HEAD_END);
        if (end < 0) return;
        const head = pending.subarray(0, end).toString('latin1');
        pending = pending.subarray(end + HEAD_END.length);
        const [requestLine = '', ...headers] = head.split('\r\n');
        const [method = '', path = ''] = requestLine.split(' ');
        if (headers.some((line) => /^transfer-encoding:/i.test(line))) {
          throw new Error('lossy proxy: chunked request bodies are not supported');
        }
        const length = Number(/^content-length:\s*(\d+)/im.exec(headers.join('\n'))?.[1] ?? 0);
        const rewritten = headers.map((line) => (/^host:/i.test(line) ? `host: ${upstreamUrl.host}` : line));
        upstream.write(`${[requestLine, ...rewritten].join('\r\n')}\r\n\r\n`);
        current = { index: requests.length, connection, method, path, body: '' };
        requests.push(current);
        bodyLeft = length;
        bodyParts = [];
      }
    }

    client.on('data', function onRequestBytes(chunk) {
      try {
        forwardRequests(chunk);
      } catch {
        client.destroy();
      }
    });
    upstream.on('data', function onAnswerBytes(chunk) {
      const request = current;
      if (request && request.lost === undefined) request.lost = lose(request, requests);
      if (request?.lost) {
        if (request.lost === 'reset') client.resetAndDestroy();
        else client.destroy();
        upstream.destroy();
        return;
      }
      client.write(chunk);
    });
  });

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const address = server.address();
  if (typeof address !== 'object' || address === null) throw new Error('lossy proxy: no address');

  return {
    url: `http://127.0.0.1:${address.port}`,
    requests,
    close() {
      for (const socket of sockets) socket.destroy();
      return new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
