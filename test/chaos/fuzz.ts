import { Agent, request as httpRequest } from 'node:http';
import fc from 'fast-check';
import type { JWTPayload } from 'jose';
import type { DevSigningKey } from '../../lib/local/dev-auth';
import { auditTenant } from './audit';
import type { ChaosContext, ScenarioResult } from './scenario';
import { ChaosCaller, inBatches } from './tally';

/**
 * The error codes and statuses docs/api.md documents ("Answers"): an error answer must carry one of these
 * codes with exactly this status. Written out from the documentation, not imported from the status
 * map the server answers with, so a drift between the two shows here.
 */
const DOCUMENTED_ERROR_STATUS: Readonly<Record<string, number>> = {
  invalid_args: 400,
  unauthorized: 401,
  forbidden: 403,
  not_found: 404,
  method_not_allowed: 405,
  payload_too_large: 413,
  conflict: 422,
  internal: 500,
  unavailable: 503,
};

const TOOL_NAMES = ['create_invoice', 'refund', 'create_ticket', 'close_ticket', 'send_email'] as const;

/** What a fuzzed request was aimed at, which decides the shape of a successful answer. */
type Target =
  | 'write'
  | 'listing'
  | 'operation'
  | 'invoice'
  | 'ticket'
  | 'health'
  | 'mcp'
  | 'metadata'
  | 'openapi'
  | 'other';

/** One fuzzed request. */
export interface FuzzRequest {
  readonly method: string;
  readonly path: string;
  readonly headers: Readonly<Record<string, string | string[]>>;
  readonly body: Buffer | undefined;
  readonly target: Target;
}

/** What the run has to act on: tokens of every kind, and objects its tenant owns. */
interface FuzzWorld {
  /** `authorization` header values the server accepts. */
  readonly validAuthorizations: readonly string[];
  /** `authorization` header values it must refuse: every way a token can be wrong. */
  readonly wrongAuthorizations: readonly string[];
  readonly invoices: readonly { readonly invoice_id: string; readonly amount: number }[];
  readonly tickets: readonly string[];
}

/** Printable Latin-1, what an HTTP header value may carry. */
const headerText = (maxLength: number) =>
  fc.string({
    unit: fc
      .integer({ min: 0x20, max: 0xff })
      .filter((code) => code !== 0x7f)
      .map((code) => String.fromCharCode(code)),
    maxLength,
  });

/** Strings as agents, models and attackers send them. */
const text = fc.oneof(
  { arbitrary: fc.string({ maxLength: 40 }), weight: 4 },
  { arbitrary: fc.string({ unit: 'grapheme', maxLength: 40 }), weight: 2 },
  { arbitrary: fc.string({ unit: 'binary', maxLength: 20 }), weight: 1 },
  { arbitrary: fc.constantFrom('', ' ', '\u0000', '__proto__', 'null', '<script>', "' OR 1=1 --"), weight: 1 },
  { arbitrary: fc.integer({ min: 200, max: 3_000 }).map((n) => 'x'.repeat(n)), weight: 1 },
);

/** A value where an integer amount belongs: right, wrong and absurd. */
const amount = fc.oneof(
  { arbitrary: fc.integer({ min: 1, max: 1_000_000 }), weight: 4 },
  {
    arbitrary: fc.oneof(
      fc.integer(),
      fc.double(),
      fc.constantFrom(0, -1, 2 ** 53, 1e308, Number.MAX_SAFE_INTEGER),
      fc.string({ maxLength: 8 }),
      fc.constant(null),
      fc.boolean(),
    ),
    weight: 2,
  },
);

/** Keys: valid ones, and every way one can be wrong (empty, too long, non-ASCII, not a string). */
const idempotencyKey = fc.oneof(
  { arbitrary: fc.stringMatching(/^[A-Za-z0-9_-]{1,40}$/), weight: 6 },
  {
    arbitrary: fc.oneof(
      fc.constantFrom('', ' ', '"quoted"', 'k'.repeat(255), 'k'.repeat(256), 'ключ', 'tab\tkey'),
      fc.string({ unit: 'grapheme', maxLength: 30 }),
    ),
    weight: 2,
  },
);

/** One of `values` half the time, else `otherwise` (only `otherwise` when there are no values). */
function oneOfOr<T>(values: readonly T[], otherwise: fc.Arbitrary<T>): fc.Arbitrary<T> {
  return values.length > 0 ? fc.oneof(fc.constantFrom(...values), otherwise) : otherwise;
}

function argumentsOf(world: FuzzWorld) {
  const invoiceId = oneOfOr(
    world.invoices.map((invoice) => invoice.invoice_id),
    text,
  );
  const ticketKey = oneOfOr(world.tickets, text);
  const refundAmount = oneOfOr<unknown>(
    world.invoices.map((invoice) => invoice.amount),
    amount,
  );
  return {
    create_invoice: fields({ customer: text, amount, currency: fc.oneof(fc.constantFrom('usd', 'eur'), text) }),
    refund: fields({ invoice_id: invoiceId, amount: refundAmount }),
    create_ticket: fields({ title: text, body: text }),
    close_ticket: fields({ ticket_key: ticketKey, resolution: text }),
    send_email: fields({ to: fc.oneof(fc.emailAddress(), text), subject: text, body: text }),
  };
}

/** Every field, mostly; now and then some left out. */
function fields(model: Record<string, fc.Arbitrary<unknown>>): fc.Arbitrary<Record<string, unknown>> {
  return fc.oneof(
    { arbitrary: fc.record(model), weight: 3 },
    { arbitrary: fc.record(model, { requiredKeys: [] }), weight: 1 },
  );
}

/** A write's body: its arguments (sometimes with extra fields or the key in odd places), or no JSON at all. */
function writeBody(args: fc.Arbitrary<Record<string, unknown>>) {
  const withKey = fc
    .tuple(
      args,
      fc.oneof(
        { arbitrary: fc.constant(null), weight: 5 },
        {
          arbitrary: fc.dictionary(fc.string({ maxLength: 12 }), fc.jsonValue({ maxDepth: 2 }), {
            minKeys: 1,
            maxKeys: 2,
          }),
          weight: 1,
        },
      ),
      fc.option(fc.oneof(idempotencyKey, fc.jsonValue({ maxDepth: 1 })), { freq: 5 }),
    )
    .map(([fields, extra, key]) =>
      JSON.stringify({ ...fields, ...(extra ?? {}), ...(key === null ? {} : { idempotency_key: key }) }),
    );
  return fc.oneof(
    { arbitrary: withKey, weight: 12 },
    { arbitrary: fc.jsonValue({ maxDepth: 3 }).map((value) => JSON.stringify(value)), weight: 1 },
    { arbitrary: withKey.chain((json) => fc.nat(json.length).map((cut) => json.slice(0, cut))), weight: 1 },
    { arbitrary: fc.uint8Array({ maxLength: 64 }).map((bytes) => Buffer.from(bytes)), weight: 1 },
    { arbitrary: fc.constantFrom('', '{', 'null', '[]', '{"idempotency_key":"k"', '\ufeff{}'), weight: 1 },
    {
      // Over the API's 64 KB, and rarely over the 6 MB a request may carry at all.
      arbitrary: fc
        .oneof(
          { arbitrary: fc.integer({ min: 65_537, max: 300_000 }), weight: 60 },
          { arbitrary: fc.constant(6 * 2 ** 20 + 1), weight: 1 },
        )
        .map((size) => JSON.stringify({ idempotency_key: 'big', customer: 'x'.repeat(size), amount: 1 })),
      weight: 1,
    },
  );
}

/** A path segment: a plain one, a percent-encoded odd one, or raw characters (broken escapes included). */
const segment = fc.oneof(
  { arbitrary: fc.stringMatching(/^[a-z0-9_]{1,20}$/), weight: 3 },
  { arbitrary: fc.string({ unit: 'grapheme', maxLength: 20 }).map(encodeURIComponent), weight: 2 },
  {
    arbitrary: fc.string({ unit: fc.constantFrom(..."abc09-_.~%!$&'()*+,;=:@".split('')), maxLength: 20 }),
    weight: 2,
  },
  {
    arbitrary: fc.constantFrom('%zz', '%', '%E0%A4%A', '..', '.', '__proto__', 'constructor', 'x'.repeat(400)),
    weight: 1,
  },
);

/** Tool names on the route: the real ones, and some that are not. */
const toolName = fc.oneof(
  { arbitrary: fc.constantFrom(...TOOL_NAMES), weight: 8 },
  {
    arbitrary: fc.constantFrom('__proto__', 'constructor', 'toString', 'REFUND', 'refund%00', 'get_invoice'),
    weight: 1,
  },
  { arbitrary: segment, weight: 1 },
);

/** Extra headers: random names and Latin-1 values, never the framing ones (Node sets those). */
const extraHeaders = fc.dictionary(
  fc.oneof(
    fc.stringMatching(/^x-[a-z0-9-]{1,16}$/),
    fc.constantFrom('accept', 'accept-encoding', 'cookie', 'x-forwarded-for', 'x-amz-date', 'content-encoding'),
  ),
  headerText(80),
  { maxKeys: 3 },
);

/** The request generator: routes, methods, tokens, headers and bodies, weighted towards the writes. */
export function fuzzRequests(world: FuzzWorld): fc.Arbitrary<FuzzRequest> {
  const args = argumentsOf(world);
  // Most requests get past the edge, so that most reach validation and the runtime.
  const authorization = fc.oneof(
    { arbitrary: fc.constantFrom(...world.validAuthorizations), weight: 12 },
    { arbitrary: fc.constantFrom(...world.wrongAuthorizations), weight: 3 },
    { arbitrary: fc.constant(null), weight: 1 },
  );
  const contentType = fc.oneof(
    { arbitrary: fc.constant('application/json'), weight: 12 },
    {
      arbitrary: fc.constantFrom(
        'application/json; charset=utf-8',
        'text/plain',
        'application/x-www-form-urlencoded',
        'multipart/form-data; boundary=x',
        'application/json; charset=latin1',
        '',
      ),
      weight: 2,
    },
    { arbitrary: fc.constant(null), weight: 1 },
  );
  const keyHeader = fc.oneof(
    { arbitrary: fc.constant(null), weight: 6 },
    {
      arbitrary: fc.oneof(
        idempotencyKey.filter((key) => /^[\t\x20-\x7e]*$/.test(key)),
        headerText(40),
        idempotencyKey.map((key) => `"${key.replace(/[^\x20-\x7e]/g, '')}"`),
      ),
      weight: 2,
    },
  );
  const oddHeaders = fc.oneof(
    { arbitrary: fc.constant(null), weight: 20 },
    {
      arbitrary: fc.constantFrom<Record<string, string | string[]>>(
        { origin: 'http://evil.example' },
        { origin: 'null' },
        { host: 'evil.example' },
        { 'idempotency-key': ['k1', 'k2'] },
        { accept: 'application/json, text/event-stream' },
        { 'x-http-method-override': 'DELETE' },
      ),
      weight: 1,
    },
  );

  const write = fc.constantFrom(...TOOL_NAMES).chain((tool) =>
    fc.record({
      method: fc.oneof(
        { arbitrary: fc.constant('POST'), weight: 12 },
        { arbitrary: fc.constantFrom('PUT', 'PATCH', 'DELETE', 'GET', 'OPTIONS'), weight: 1 },
      ),
      path: fc.oneof(
        { arbitrary: fc.constant(`/tools/${tool}`), weight: 10 },
        { arbitrary: toolName.map((name) => `/tools/${name}`), weight: 1 },
      ),
      body: writeBody(args[tool]),
    }),
  );
  const read = fc.oneof(
    fc
      .tuple(toolName, fc.oneof(idempotencyKey.map(encodeURIComponent), segment))
      .map(([tool, key]) => `/tools/${tool}/operations/${key}`),
    oneOfOr(
      world.invoices.map((invoice) => invoice.invoice_id),
      segment,
    ).map((id) => `/invoices/${id}`),
    oneOfOr(world.tickets, segment).map((key) => `/tickets/${key}`),
    fc.constantFrom(
      '/tools',
      '/health',
      '/openapi.json',
      '/.well-known/oauth-protected-resource',
      '/.well-known/oauth-protected-resource/mcp',
    ),
    fc.array(segment, { minLength: 0, maxLength: 4 }).map((parts) => `/${parts.join('/')}`),
    // Targets that a URL parser normalises or reads a host from.
    fc.constantFrom(
      '//',
      '//%zz/tools',
      '//evil.example/tools',
      '//127.0.0.1/health',
      '/./tools',
      '/tools/../health',
      '/%2e%2e/tools',
      '/tools/refund/',
      '/TOOLS',
    ),
    fc
      .tuple(
        fc.constantFrom('/tools', '/invoices/x', '/health'),
        fc.string({ unit: fc.constantFrom(...'a=b&%zz?#'.split('')), maxLength: 12 }),
      )
      .map(([path, query]) => `${path}?${query}`),
  );
  const mcpBody = fc
    .record(
      {
        jsonrpc: fc.constantFrom('2.0', '1.0'),
        id: fc.oneof(fc.nat(), fc.string({ maxLength: 8 }), fc.constant(null)),
        method: fc.constantFrom('tools/call', 'tools/list', 'initialize', 'ping', 'resources/list', 'nope'),
        params: fc.record({ name: toolName, arguments: fc.jsonValue({ maxDepth: 2 }) }, { requiredKeys: [] }),
      },
      { requiredKeys: [] },
    )
    .map((message) => JSON.stringify(message));

  const shaped = fc.oneof(
    { arbitrary: write.map((request) => ({ ...request, body: Buffer.from(request.body) })), weight: 14 },
    {
      arbitrary: fc.record({
        method: fc.oneof(
          { arbitrary: fc.constant('GET'), weight: 8 },
          { arbitrary: fc.constantFrom('POST', 'DELETE', 'OPTIONS'), weight: 1 },
        ),
        path: read,
        body: fc.constant(undefined),
      }),
      weight: 5,
    },
    {
      arbitrary: fc.record({
        method: fc.constantFrom('POST', 'POST', 'POST', 'GET', 'DELETE'),
        path: fc.constant('/mcp'),
        body: fc.oneof(mcpBody, fc.constantFrom('', '{', '[]')).map((body) => Buffer.from(body)),
      }),
      weight: 1,
    },
  );

  return fc
    .record({ shaped, authorization, contentType, keyHeader, extras: extraHeaders, odd: oddHeaders })
    .map(({ shaped: { method, path, body }, authorization: auth, contentType: type, keyHeader: key, extras, odd }) => {
      const headers: Record<string, string | string[]> = { ...extras };
      if (auth !== null) headers.authorization = auth;
      if (type !== null && body !== undefined) headers['content-type'] = type;
      if (key !== null) headers['idempotency-key'] = key;
      Object.assign(headers, odd ?? {});
      return { method, path, headers, body, target: targetOf(method, path) };
    });
}

/** What a request is aimed at, by the routes docs/api.md lists. */
function targetOf(method: string, path: string): Target {
  // The server routes on the WHATWG-normalised path (dot segments, `%2e` included, resolved).
  let pathname: string;
  try {
    ({ pathname } = new URL(path, 'http://localhost'));
  } catch {
    return 'other';
  }
  const parts = pathname.split('/');
  if (pathname === '/mcp') return 'mcp';
  if (method !== 'GET' && method !== 'POST') return 'other';
  if (method === 'POST') return parts.length === 3 && parts[1] === 'tools' ? 'write' : 'other';
  if (pathname === '/tools') return 'listing';
  if (pathname === '/health') return 'health';
  if (pathname === '/openapi.json') return 'openapi';
  if (pathname.startsWith('/.well-known/oauth-protected-resource')) return 'metadata';
  if (parts.length === 5 && parts[1] === 'tools' && parts[3] === 'operations') return 'operation';
  if (parts.length === 3 && parts[1] === 'invoices') return 'invoice';
  if (parts.length === 3 && parts[1] === 'tickets') return 'ticket';
  return 'other';
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Whether a body is `{ ok: false, error: { code, message } }` with a documented code for this status. */
function errorShapeProblem(status: number, body: Record<string, unknown>): string | undefined {
  const error = body.error;
  if (body.ok !== false || !isObject(error) || typeof error.code !== 'string' || typeof error.message !== 'string') {
    return 'not { ok: false, error: { code, message } }';
  }
  const documented = DOCUMENTED_ERROR_STATUS[error.code];
  if (documented === undefined) return `undocumented error code ${error.code}`;
  return documented === status ? undefined : `code ${error.code} with HTTP ${status}, documented ${documented}`;
}

/**
 * Why an answer breaks the contract, or undefined: no answer of 500 or more but 503 `unavailable`;
 * a JSON body always; errors as `{ ok: false, error: { code, message } }` with the documented status;
 * successes in the shape docs/api.md gives for the route. `/mcp` may also answer as JSON-RPC.
 */
export function answerProblem(
  request: FuzzRequest,
  status: number,
  contentType: string | undefined,
  text: string,
): string | undefined {
  if (status >= 500 && status !== 503) return `HTTP ${status}`;
  // MCP's Streamable HTTP transport accepts input of only notifications or responses with 202 and no body.
  if (request.target === 'mcp' && status === 202 && text === '') return undefined;
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    return `HTTP ${status} with a body that is not JSON: ${JSON.stringify(text.slice(0, 80))}`;
  }
  if (!contentType?.includes('application/json')) return `HTTP ${status} with content-type ${contentType}`;
  if (!isObject(body)) return `HTTP ${status} with a JSON body that is not an object`;
  const jsonRpc = request.target === 'mcp' && body.jsonrpc === '2.0';
  if (status >= 400) {
    if (jsonRpc && isObject(body.error) && typeof body.error.code === 'number') return undefined;
    return errorShapeProblem(status, body);
  }
  switch (request.target) {
    case 'write':
      if (status === 202) {
        return body.ok === false &&
          body.status === 'pending' &&
          typeof body.key === 'string' &&
          typeof body.retry_after_ms === 'number'
          ? undefined
          : 'a 202 that is not { ok: false, status: "pending", key, retry_after_ms }';
      }
      return status === 200 &&
        body.ok === true &&
        typeof body.idempotent === 'boolean' &&
        typeof body.key === 'string' &&
        isObject(body.receipt)
        ? undefined
        : `HTTP ${status} that is not { ok: true, idempotent, key, receipt }`;
    case 'operation':
      return status === 200 &&
        body.ok === true &&
        typeof body.key === 'string' &&
        ['completed', 'pending', 'abandoned'].includes(String(body.status))
        ? undefined
        : `HTTP ${status} that is not an operation`;
    case 'invoice':
      return status === 200 && body.ok === true && isObject(body.invoice)
        ? undefined
        : `HTTP ${status} that is not { ok, invoice }`;
    case 'ticket':
      return status === 200 && body.ok === true && isObject(body.ticket)
        ? undefined
        : `HTTP ${status} that is not { ok, ticket }`;
    case 'listing':
      return status === 200 && Array.isArray(body.tools) ? undefined : `HTTP ${status} that is not { tools }`;
    case 'health':
      return status === 200 && body.ok === true ? undefined : `HTTP ${status} that is not { ok: true }`;
    case 'metadata':
      return status === 200 && typeof body.resource === 'string'
        ? undefined
        : `HTTP ${status} that is not resource metadata`;
    case 'openapi':
      return status === 200 && typeof body.openapi === 'string' ? undefined : `HTTP ${status} that is not OpenAPI`;
    case 'mcp':
      return status === 200 && jsonRpc ? undefined : `HTTP ${status} that is not a JSON-RPC answer`;
    case 'other':
      return `HTTP ${status} for a request no route serves`;
  }
}

/** Sends one request over `agent` and reads the whole answer, or rejects after `timeoutMs`. */
function send(
  baseUrl: string,
  agent: Agent,
  request: FuzzRequest,
  timeoutMs: number,
): Promise<{ status: number; contentType: string | undefined; text: string }> {
  const url = new URL(baseUrl);
  // Framed explicitly: Node sends a GET's or DELETE's body without a length otherwise, and the server
  // would read it as the next request on the connection.
  const headers = request.body
    ? { ...request.headers, 'content-length': String(request.body.length) }
    : request.headers;
  return new Promise((resolve, reject) => {
    const outgoing = httpRequest(
      {
        host: url.hostname,
        port: url.port,
        method: request.method,
        path: request.path,
        headers,
        agent,
      },
      function onAnswer(answer) {
        const chunks: Buffer[] = [];
        answer.on('data', (chunk: Buffer) => chunks.push(chunk));
        answer.on('error', reject);
        answer.on('end', () =>
          resolve({
            status: answer.statusCode ?? 0,
            contentType: answer.headers['content-type'],
            text: Buffer.concat(chunks).toString('utf8'),
          }),
        );
      },
    );
    outgoing.setTimeout(timeoutMs, () => outgoing.destroy(new Error(`no answer within ${timeoutMs} ms`)));
    outgoing.on('error', reject);
    outgoing.end(request.body);
  });
}

/** Tokens of every kind: valid for the tenants, and expired, unsigned, foreign, malformed, claimless. */
async function authorizationsFor(key: DevSigningKey, others: readonly DevSigningKey[], tenants: readonly string[]) {
  const claim = key.settings.tenantClaim;
  const valid = await Promise.all(tenants.flatMap((tenant) => ['ada', 'bob'].map((user) => key.mint(tenant, user))));
  const [tenant] = tenants;
  const now = Math.floor(Date.now() / 1000);
  const header = Buffer.from(JSON.stringify({ alg: 'none' })).toString('base64url');
  const payload = Buffer.from(JSON.stringify({ [claim]: tenant, sub: 'ada', exp: now + 3600 })).toString('base64url');
  const wrong = await Promise.all([
    key.sign({ [claim]: tenant, sub: 'ada', exp: now - 60 }, null), // expired
    key.sign({ [claim]: tenant, sub: 'ada' }, null), // no exp
    key.sign({ sub: 'ada' }), // no tenant
    key.sign({ [claim]: tenant }), // no user
    key.sign({ [claim]: 42, sub: 'ada' }),
    key.sign({ [claim]: ['a', 'b'], sub: { id: 1 } } as unknown as JWTPayload), // claims of the wrong types
    key.sign({ [claim]: 't'.repeat(300), sub: 'u'.repeat(300) }),
    key.sign({ [claim]: 'ténant-✓', sub: 'ädä' }),
    ...others.map((other) => other.mint(tenant ?? 't', 'ada')), // another key, issuer or audience
  ]);
  const [first = ''] = valid;
  const validAuthorizations = [...valid.map((token) => `Bearer ${token}`), `bearer ${first}`];
  const wrongAuthorizations = [
    ...wrong.map((token) => `Bearer ${token}`),
    `Bearer ${header}.${payload}.`,
    `Bearer ${first.slice(0, -3)}abc`,
    'Bearer',
    'Bearer ',
    'Basic YWRhOnNlY3JldA==',
    first,
    'Bearer a.b.c',
    `Bearer ${'x'.repeat(3_000)}`,
  ];
  return { validAuthorizations, wrongAuthorizations };
}

/**
 * 6. Fuzzing: `requests` requests generated by fast-check — random tools and routes, random and mutated
 * arguments, oversized and malformed bodies, odd headers and keys, valid and invalid tokens — sent
 * straight to the server, `concurrency` at a time. Every answer must be below 500 or a 503, a JSON body
 * of the documented shape; and the tenant's ledger must still show at most one movement per invoice.
 */
export async function fuzz(
  context: ChaosContext,
  key: DevSigningKey,
  otherKeys: readonly DevSigningKey[],
  { requests = 3_000, concurrency = 8, seed = Date.now() % 2 ** 31, timeoutMs = 15_000 } = {},
): Promise<ScenarioResult> {
  const name = `6 fuzz (${requests} requests)`;
  const tenants = [`chaos-${context.runId}-fuzz-a`, `chaos-${context.runId}-fuzz-b`];
  const setup = new ChaosCaller(context.server.url, await context.mintToken(tenants[0] ?? ''));
  const created = await inBatches(
    Array.from({ length: 10 }, (_, i) => i),
    10,
    async function seed(i) {
      const invoice = await setup.call('create_invoice', `fuzz-inv-${i}`, {
        customer: `cus_fuzz_${i}`,
        amount: 500 + i,
      });
      const ticket = await setup.call('create_ticket', `fuzz-tck-${i}`, { title: `fuzz ticket ${i}` });
      return { invoice: invoice.receipt, ticket: ticket.receipt };
    },
  );
  const world: FuzzWorld = {
    ...(await authorizationsFor(key, otherKeys, tenants)),
    invoices: created.flatMap(({ invoice }) =>
      invoice ? [{ invoice_id: String(invoice.invoice_id), amount: Number(invoice.amount) }] : [],
    ),
    tickets: created.flatMap(({ ticket }) => (ticket ? [String(ticket.ticket_key)] : [])),
  };

  const startedAt = Date.now();
  const samples = fc.sample(fuzzRequests(world), { numRuns: requests, seed });
  const agent = new Agent({ keepAlive: true, maxSockets: concurrency });
  const byStatus = new Map<number, number>();
  const violations: string[] = [];
  try {
    await inBatches(samples, concurrency, async function fuzzOne(request) {
      let problem: string | undefined;
      try {
        const answer = await send(context.server.url, agent, request, timeoutMs);
        byStatus.set(answer.status, (byStatus.get(answer.status) ?? 0) + 1);
        problem = answerProblem(request, answer.status, answer.contentType, answer.text);
      } catch (error) {
        problem = `no answer: ${(error as Error).message}`;
      }
      if (problem) {
        const body = request.body ? ` body ${JSON.stringify(request.body.subarray(0, 120).toString('utf8'))}` : '';
        violations.push(`${request.method} ${request.path.slice(0, 100)}${body}: ${problem}`);
      }
    });
  } finally {
    agent.destroy();
  }
  const durationMs = Date.now() - startedAt;

  const audits = await Promise.all(
    tenants.map((tenant) => auditTenant(context.services, tenant, [], { intentsNamed: false })),
  );
  const doubleEffects = audits.flatMap((audit) => audit.doubleEffects);
  const others = [...byStatus].filter(([status]) => status >= 500 && status !== 503);
  const sorted = [...byStatus].sort(([a], [b]) => a - b);
  return {
    name,
    calls: requests,
    requests: samples.length,
    lost: 0,
    retries: 0,
    outcomes: Object.fromEntries(sorted.map(([status, count]) => [String(status), count])),
    doubleEffects: doubleEffects.length,
    unavailable: byStatus.get(503) ?? 0,
    otherServerErrors: others.reduce((sum, [, count]) => sum + count, 0),
    durationMs,
    notes: [
      `seed ${seed} (CHAOS_SEED=${seed} replays these requests), ${concurrency} at a time, ` +
        `${world.validAuthorizations.length + world.wrongAuthorizations.length} kinds of authorization, ${world.invoices.length} invoices to refund`,
    ],
    violations: [
      ...violations.slice(0, 10).map((line) => `contract: ${line}`),
      ...(violations.length > 10 ? [`contract: … and ${violations.length - 10} more`] : []),
      ...doubleEffects.map((line) => `double effect: ${line}`),
      ...audits
        .flatMap((audit) => [...audit.disagreements, ...audit.unfinished])
        .map((line) => `after fuzzing: ${line}`),
    ],
  };
}
