import type { APIGatewayProxyEventV2WithJWTAuthorizer, Context } from 'aws-lambda';
import * as z from 'zod/mini';
import { readHandler } from '../../lib/http/reads';
import { handleMcp, McpServerPool } from '../../lib/mcp/http';
import { readTool } from '../../lib/mcp/tools';
import { defineReadModule, readFailure } from '../../lib/tools/read-module';
import { capturedLogger } from '../helpers/captured-logger';

/** A note as a store holds it: the caller's fields and the ones that are not the caller's business. */
type StoredNote = {
  tenant: string;
  note_id: string;
  text: string;
  created_by: string;
};

interface NoteServices {
  readonly notes: ReadonlyMap<string, StoredNote>;
}

/**
 * A read that answers the stored row as it is: it compiles (a row with more fields is still an object
 * with `note_id` and `text`), and its `found` names two fields.
 */
function noteRead(found: z.ZodMiniObject) {
  return defineReadModule({
    name: 'get_note',
    description: "Read one of the caller's notes. Read-only.",
    path: '/notes/{note_id}',
    args: z.strictObject({ note_id: z.string().check(z.minLength(1)) }),
    found: z.strictObject({ note: found }),
    access: {},
    async read({ note_id }, caller, { notes }: NoteServices) {
      const row = notes.get(`${caller.tenant}/${note_id}`);
      if (!row) return readFailure('not_found', `note_id: no note ${note_id}`);
      return { ok: true, note: row };
    },
  });
}

const ROW: StoredNote = { tenant: 'acme', note_id: 'n1', text: 'Call Ada back', created_by: 'call-secret-7' };
const services: NoteServices = { notes: new Map([['acme/n1', ROW]]) };
const context = { getRemainingTimeInMillis: () => 9_000 } as Context;

/** `GET /notes/n1` as API Gateway hands it over, from acme's ada. */
function restEvent(): APIGatewayProxyEventV2WithJWTAuthorizer {
  return {
    headers: {},
    pathParameters: { note_id: 'n1' },
    requestContext: { authorizer: { jwt: { claims: { tenant_id: 'acme', sub: 'ada' }, scopes: [] } } },
  } as unknown as APIGatewayProxyEventV2WithJWTAuthorizer;
}

/** A `tools/call` of the read over MCP, from acme's ada: the JSON-RPC result. */
async function mcpCall(read: ReturnType<typeof noteRead>, logger: ReturnType<typeof capturedLogger>['logger']) {
  const dependencies = {
    tools: [readTool(read, services)],
    logger,
    issuer: 'http://localhost',
    verifyToken: async () => ({ tenant_id: 'acme', sub: 'ada' }),
  };
  const event = {
    rawPath: '/mcp',
    headers: {
      authorization: 'Bearer acme/ada',
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
    },
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: 1,
      method: 'tools/call',
      params: { name: 'get_note', arguments: { note_id: 'n1' } },
    }),
    requestContext: { domainName: 'localhost', http: { method: 'POST' } },
  } as unknown as APIGatewayProxyEventV2WithJWTAuthorizer;
  const response = await handleMcp(dependencies, new McpServerPool(dependencies), event, context);
  return JSON.parse(response.body).result as { structuredContent: Record<string, unknown>; isError: boolean };
}

describe("a read's answer, checked against its found schema before either transport sends it", () => {
  it('a row with fields found does not name answers internal over REST and MCP, logged with the read and the field', async () => {
    const read = noteRead(z.strictObject({ note_id: z.string(), text: z.string() }));
    const captured = capturedLogger();

    let rest: Awaited<ReturnType<ReturnType<typeof readHandler>>>;
    let mcp: Awaited<ReturnType<typeof mcpCall>>;
    try {
      rest = await readHandler(read, services, captured.logger)(restEvent(), context);
      mcp = await mcpCall(read, captured.logger);
    } finally {
      captured.restore();
    }

    expect(rest.statusCode).toBe(500);
    expect(JSON.parse(rest.body)).toMatchObject({ ok: false, error: { code: 'internal' } });
    expect(mcp).toMatchObject({ isError: true, structuredContent: { ok: false, error: { code: 'internal' } } });
    // Never the row: neither its values nor the names of the fields found leaves out.
    for (const sent of [rest.body, JSON.stringify(mcp)]) {
      expect(sent).not.toMatch(/call-secret-7|created_by|Call Ada back/);
    }
    const logged = captured.lines.filter((line) => line.level === 'ERROR');
    expect(logged).toHaveLength(2);
    for (const line of logged) {
      expect(JSON.stringify(line.error)).toMatch(/read get_note: .*tenant, created_by: unknown field/);
      expect(JSON.stringify(line)).not.toMatch(/call-secret-7|Call Ada back/);
    }
  });

  it('sends what found parses: fields a loose schema does not name are dropped, on both transports', async () => {
    const read = noteRead(z.object({ note_id: z.string(), text: z.string() }));
    const captured = capturedLogger();

    let rest: Awaited<ReturnType<ReturnType<typeof readHandler>>>;
    let mcp: Awaited<ReturnType<typeof mcpCall>>;
    try {
      rest = await readHandler(read, services, captured.logger)(restEvent(), context);
      mcp = await mcpCall(read, captured.logger);
    } finally {
      captured.restore();
    }

    expect(rest.statusCode).toBe(200);
    const { next: _next, ...body } = JSON.parse(rest.body);
    expect(body).toEqual({ ok: true, note: { note_id: 'n1', text: 'Call Ada back' } });
    const { next: _mcpNext, ...structured } = mcp.structuredContent;
    expect(structured).toEqual(body);
  });
});

describe("defineReadModule's checks of the arguments", () => {
  /** A read at `/pages/{page}` whose one argument is `page`. */
  const pageRead = (page: z.ZodMiniType) => () =>
    defineReadModule({
      name: 'get_page',
      description: 'A page of notes.',
      path: '/pages/{page}',
      args: z.strictObject({ page }),
      found: z.strictObject({ notes: z.array(z.string()) }),
      access: {},
      async read() {
        return { ok: true, notes: [] };
      },
    });

  it.each([
    ['an integer', z.int().check(z.positive())],
    ['a number', z.number()],
    ['a boolean', z.boolean()],
    ['an optional number', z.optional(z.number())],
    ['a number literal', z.literal(2)],
    ['an object', z.strictObject({ n: z.string() })],
  ])('refuses %s: REST sends a path parameter as text, so it could never match', (_label, page) => {
    expect(pageRead(page)).toThrow(
      new Error('read get_page: args.page: not a string (REST sends a path parameter as text)'),
    );
  });

  it.each([
    ['a string', z.string().check(z.minLength(1))],
    ['a string of a format', z.uuid()],
    ['a string enum', z.enum(['first', 'last'])],
    ['a string literal', z.literal('first')],
    ['an optional string', z.optional(z.string())],
    ['a string piped into a number', z.pipe(z.string(), z.transform(Number))],
  ])('accepts %s', (_label, page) => {
    expect(pageRead(page)).not.toThrow();
  });
});
