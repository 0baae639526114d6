import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { READS } from '../../app/reads';
import { createServices } from '../../app/services';
import { TOOLS } from '../../app/tools';
import type { NextStep } from '../../lib/api/next-step';
import type { TokenVerifier } from '../../lib/auth/token-claims';
import { createToolRuntime } from '../../lib/lambda/runtime';
import { startLocalApi } from '../../lib/local/api-server';
import { DevSigningKey } from '../../lib/local/dev-auth';
import { freePort } from '../../lib/local/free-port';
import type { RouteBuckets } from '../../lib/local/route-buckets';
import type { AnyToolModule } from '../../lib/tools/tool-module';

export interface Reply {
  readonly status: number;
  readonly headers: Headers;
  /** The JSON body without its `next` (each suite asserts what it tests; test/http/next-step.test.ts the next steps). */
  // biome-ignore lint/suspicious/noExplicitAny: replies are asserted structurally by each test
  readonly body: any;
  /** The answer's next step, when it carries one. */
  readonly next: NextStep | undefined;
  /** The body as it came, `next` included (what a document's schema is checked against). */
  readonly json: unknown;
}

/** The body and its `next`, apart. */
export function splitNext(parsed: unknown): { body: unknown; next: NextStep | undefined } {
  if (typeof parsed !== 'object' || parsed === null || !('next' in parsed)) return { body: parsed, next: undefined };
  const { next, ...body } = parsed as { next: NextStep };
  return { body, next };
}

/**
 * The local API on a free loopback port, composed as `npm start` composes it (the registry's tools, or
 * the ones a test gives), with a throwaway signing key — the system under test for HTTP-level suites.
 */
export async function startTestApi(
  options: {
    tools?: readonly AnyToolModule[];
    timeoutMs?: number;
    /** @default the signing key's own verification, as `npm start` does */
    verifyToken?: TokenVerifier;
    /** @default none (loopback names only) */
    allowedHosts?: readonly string[];
    /**
     * API Gateway's buckets. The suites built on this API are about what the handlers answer, and some
     * send more at once than a route's burst: none, unless a test is about throttling
     * (`test/http/mcp-flood.test.ts` gives the stack's).
     * @default 'none'
     */
    throttle?: RouteBuckets | 'none';
    /** API Gateway's JWT authorizer, apart from the handlers' verifier. @default verifyToken */
    authorizer?: TokenVerifier;
  } = {},
) {
  // The port is chosen first: the dev issuer is the server's own URL.
  const port = await freePort();
  const env = { ...process.env, PORT: String(port), DEV_KEY_DIR: mkdtempSync(join(tmpdir(), 'retrysafe-key-')) };
  const key = await DevSigningKey.loadOrCreate(env);
  const services = createServices(process.env);
  const runtime = createToolRuntime(services);
  const api = await startLocalApi({
    tools: options.tools ?? TOOLS,
    services,
    logger: services.logger,
    reads: READS,
    runtime,
    verifyToken: options.verifyToken ?? ((token) => key.verify(token)),
    issuer: key.settings.issuer,
    port,
    ...(options.allowedHosts === undefined ? {} : { allowedHosts: options.allowedHosts }),
    ...(options.timeoutMs === undefined ? {} : { timeoutMs: options.timeoutMs }),
    throttle: options.throttle ?? 'none',
    ...(options.authorizer === undefined ? {} : { authorizer: options.authorizer }),
  });

  async function request(
    method: string,
    path: string,
    options: { token?: string; body?: unknown; raw?: string; headers?: Record<string, string> } = {},
  ): Promise<Reply> {
    const headers: Record<string, string> = { 'content-type': 'application/json', ...options.headers };
    if (options.token) headers.authorization = `Bearer ${options.token}`;
    const body = options.raw ?? (options.body === undefined ? undefined : JSON.stringify(options.body));
    const response = await fetch(`${api.url}${path}`, { method, headers, body });
    const text = await response.text();
    let parsed: unknown = text;
    try {
      parsed = JSON.parse(text);
    } catch {
      // not JSON: the assertion on the body will say so
    }
    return { status: response.status, headers: response.headers, ...splitNext(parsed), json: parsed };
  }

  return {
    url: api.url,
    key,
    services,
    logger: services.logger,
    reads: READS,
    runtime,
    token: (tenant: string, user = 'ada', ttl = '1h') => key.mint(tenant, user, ttl),
    /** A token signed by the server's own key, but minted with other settings (issuer, audience). */
    async tokenWith(settings: { JWT_ISSUER?: string; JWT_AUDIENCE?: string }, tenant = 'acme', user = 'ada') {
      return (await DevSigningKey.loadOrCreate({ ...env, ...settings })).mint(tenant, user);
    },
    request,
    post: (path: string, token: string, body: unknown, headers?: Record<string, string>) =>
      request('POST', path, { token, body, headers }),
    get: (path: string, token?: string) => request('GET', path, { token }),
    async close() {
      await api.close();
      services.client.destroy();
    },
  };
}

export type TestApi = Awaited<ReturnType<typeof startTestApi>>;
