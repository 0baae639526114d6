/**
 * MCP under a tokenless flood, on the local server with the stack's buckets (`lib/api/throttle.ts`,
 * `RouteBuckets`: every request takes a token of its route's bucket before the authorizer looks at it, the
 * worse order). Bounded: a fixed number of requests at a fixed rate, to 127.0.0.1 only, each with a timeout.
 *
 * Promises held (docs/deploy.md, "MCP under a tokenless flood"):
 *  - a request without a valid token is answered by the authorizer: the MCP function never runs for it;
 *  - a tokenless flood below POST /mcp's bucket leaves every authorized call succeeding within its budget;
 *  - a flood above it is answered 429 at the gateway, still without running the function.
 */
import { MCP_ROUTE_THROTTLE } from '../../lib/api/throttle';
import { RouteBuckets } from '../../lib/local/route-buckets';
import { startTestApi, type TestApi } from '../helpers/api';
import { newTenant } from '../helpers/world';

/**
 * The longest an authorized tools/call may take while the flood runs: a write on DynamoDB Local, on a warm
 * server (the first call of a process loads the tools and the JSON Schema validator: a cold start). Alone
 * they take 0.1–0.4 s; beside esbuild bundling on the other core, 1.1–1.2 s was seen.
 */
const AUTHORIZED_BUDGET_MS = 2_000;

let api: TestApi;
/** Tokens the gateway's authorizer checked, and tokens the MCP function checked (it checks again). */
let authorizerChecks = 0;
let functionChecks = 0;
beforeAll(async () => {
  api = await startTestApi({
    throttle: new RouteBuckets(),
    authorizer: (token) => {
      authorizerChecks += 1;
      return api.key.verify(token);
    },
    verifyToken: (token) => {
      functionChecks += 1;
      return api.key.verify(token);
    },
  });
});
afterAll(() => api.close());

interface Sent {
  readonly status: number;
  readonly ms: number;
  // biome-ignore lint/suspicious/noExplicitAny: JSON-RPC replies are asserted structurally
  readonly body: any;
  readonly challenge: string | null;
}

let rpcId = 0;
/** One POST /mcp, timed, with at most 5 s to answer. */
async function postMcp(message: unknown, authorization?: string): Promise<Sent> {
  const started = performance.now();
  const response = await fetch(`${api.url}/mcp`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      ...(authorization ? { authorization } : {}),
    },
    body: JSON.stringify(message),
    signal: AbortSignal.timeout(5_000),
  });
  const body = await response.json().catch(() => undefined);
  return {
    status: response.status,
    ms: performance.now() - started,
    body,
    challenge: response.headers.get('www-authenticate'),
  };
}

/** `count` requests made by `send`, started `1000 / perSecond` ms apart on a fixed schedule; all their answers. */
async function atFixedRate<T>(count: number, perSecond: number, send: (i: number) => Promise<T>): Promise<T[]> {
  const start = performance.now();
  const sent: Array<Promise<T>> = [];
  for (let i = 0; i < count; i++) {
    const due = start + (i * 1000) / perSecond;
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, due - performance.now())));
    sent.push(send(i));
  }
  return Promise.all(sent);
}

/** A tokenless flood request: half with no Authorization at all, half with a token that is no JWT. */
function tokenless(i: number): Promise<Sent> {
  const listTools = { jsonrpc: '2.0', id: ++rpcId, method: 'tools/list' };
  return postMcp(listTools, i % 2 === 0 ? undefined : `Bearer flood-${i}`);
}

/** An authorized write: a tools/call of create_invoice under `key`. */
function createInvoice(key: string) {
  return {
    jsonrpc: '2.0',
    id: ++rpcId,
    method: 'tools/call',
    params: { name: 'create_invoice', arguments: { idempotency_key: key, customer: 'cus_ada', amount: 100 } },
  };
}

/** Waits until POST /mcp's bucket is full again (it refills at its rate). */
function bucketRefilled(): Promise<void> {
  const ms = (MCP_ROUTE_THROTTLE.burstLimit / MCP_ROUTE_THROTTLE.rateLimit) * 1000 + 100;
  return new Promise((resolve) => setTimeout(resolve, ms));
}

describe('MCP under a tokenless flood', () => {
  it('keeps every authorized tools/call succeeding within its budget under 20 tokenless requests/s for 3 s, and never runs the function for them', async () => {
    const token = await api.token(newTenant());
    const warm = await postMcp(createInvoice('warm'), `Bearer ${token}`);
    await bucketRefilled();
    const [authorizerBefore, functionBefore] = [authorizerChecks, functionChecks];

    // 60 tokenless requests at 20/s (the old design 429'd every tenant from 15/s) and, meanwhile, 12
    // authorized writes at 4/s: 24/s on POST /mcp, under its 30/s.
    const [flood, authorized] = await Promise.all([
      atFixedRate(60, 20, tokenless),
      atFixedRate(12, 4, (i) => postMcp(createInvoice(`flood-${i}`), `Bearer ${token}`)),
    ]);

    expect(warm.status).toBe(200);
    // Every tokenless request refused by the authorizer (the function's 401 would name its metadata).
    expect(flood.map((sent) => sent.status)).toEqual(Array(60).fill(401));
    expect(flood.filter((sent) => sent.challenge?.includes('resource_metadata'))).toEqual([]);
    // The function checked exactly the authorized calls' tokens; the authorizer those and the 30 bad ones.
    expect(functionChecks - functionBefore).toBe(12);
    expect(authorizerChecks - authorizerBefore).toBe(12 + 30);
    // Every authorized call answered, not an error, within the budget.
    expect(authorized.map((sent) => [sent.status, sent.body?.result?.structuredContent?.ok])).toEqual(
      Array(12).fill([200, true]),
    );
    const slowest = Math.max(...authorized.map((sent) => sent.ms));
    console.info(`mcp-flood: authorized tools/call under the flood, slowest ${Math.round(slowest)} ms`);
    expect(slowest).toBeLessThan(AUTHORIZED_BUDGET_MS);
  });

  it('answers a tokenless flood above POST /mcp’s 30/s with 429 at the gateway, and still never runs the function', async () => {
    await bucketRefilled();
    const functionBefore = functionChecks;

    // 150 requests at 300/s for ~0.5 s: the bucket's 30 and what it refills meanwhile pass, the rest is 429.
    const firstSent = performance.now();
    const flood = await atFixedRate(150, 300, tokenless);
    const lastAnswered = performance.now();
    const statuses = flood.map((sent) => sent.status);
    // The most the bucket could have admitted while the flood really ran (each request is admitted between
    // its send and its answer; a loaded machine sends and answers slower).
    const admissible =
      MCP_ROUTE_THROTTLE.burstLimit + (MCP_ROUTE_THROTTLE.rateLimit * (lastAnswered - firstSent)) / 1000;

    expect(statuses.filter((status) => status !== 401 && status !== 429)).toEqual([]);
    expect(statuses.filter((status) => status === 401).length).toBeLessThanOrEqual(Math.ceil(admissible));
    expect(flood.find((sent) => sent.status === 429)?.body).toEqual({ message: 'Too Many Requests' });
    expect(functionChecks - functionBefore).toBe(0);
  });
});
