import * as z from 'zod/mini';
import { READS } from '../../app/reads';
import { TOOLS } from '../../app/tools';
import { apiRoutes } from '../../lib/api/routes';
import { HTTP_STATUS, type HttpErrorCode } from '../../lib/api/status';
import type { JsonObject } from '../../lib/idempotency/definition';
import { type OpenApiDocument, type OpenApiResponse, openApiDocument } from '../../lib/openapi/document';
import { describeTool } from '../../lib/tools/catalog';
import { defineToolModule } from '../../lib/tools/tool-module';
import { TOOLS_WITH_FIXTURE } from '../fixtures/registry';
import { type Reply, startTestApi, type TestApi } from '../helpers/api';
import { type DocumentSchemas, documentSchemas, type Method, validateOpenApi } from '../helpers/openapi';
import { gate } from '../helpers/tools';
import { newTenant } from '../helpers/world';

/** Every operation of a document, with its path and method. */
function operationsOf(document: OpenApiDocument) {
  return Object.entries(document.paths).flatMap(([path, item]) =>
    Object.entries(item).map(([method, operation]) => ({ path, method: method as Method, operation: operation! })),
  );
}

/** The error codes a response's body may carry: the `code` enum of its `{ ok: false, error }` schema. */
function errorCodesOf(document: OpenApiDocument, response: OpenApiResponse): string[] {
  const schema = response.content?.['application/json'].schema as
    | { $ref?: string; anyOf?: Array<{ $ref: string }> }
    | undefined;
  if (!schema) return [];
  const refs = schema.anyOf ? schema.anyOf.map((branch) => branch.$ref) : [schema.$ref];
  return refs.flatMap((ref) => {
    const component = document.components.schemas[String(ref).replace('#/components/schemas/', '')] as {
      properties?: { error?: { properties: { code: { enum: string[] } } } };
    };
    return component.properties?.error?.properties.code.enum ?? [];
  });
}

describe('openApiDocument', () => {
  it.each([
    ['the registry', TOOLS],
    ['the registry with the fixture tool', TOOLS_WITH_FIXTURE],
  ])('is a valid OpenAPI 3.1 document for %s', (_label, tools) => {
    const document = openApiDocument(tools, { serverUrl: 'https://api.example.com', version: '1.2.3', reads: READS });

    const result = validateOpenApi(document);

    expect(result).toEqual({ valid: true });
    expect(document).toMatchObject({
      openapi: '3.1.0',
      info: { title: 'retrysafe', version: '1.2.3' },
      servers: [{ url: 'https://api.example.com' }],
    });
  });

  it('is refused by the validator when a reference dangles (the validation can fail)', () => {
    const document = openApiDocument(TOOLS, { reads: READS });
    const { PendingAnswer: _removed, ...schemas } = document.components.schemas;

    const result = validateOpenApi({ ...document, components: { ...document.components, schemas } });

    expect(result.valid).toBe(false);
    expect(String(result.errors)).toMatch(/PendingAnswer/);
  });

  it('holds schemas that strict JSON Schema 2020-12 compiles, every one of them', () => {
    const document = openApiDocument(TOOLS_WITH_FIXTURE, { reads: READS });
    const schemas = documentSchemas(document, { strict: true });

    const refused = Object.keys(document.components.schemas).filter((name) => {
      try {
        schemas.component(name);
        return false;
      } catch {
        return true;
      }
    });

    expect(refused).toEqual([]);
  });

  it('documents every route of the registry, each once, with a unique operationId', () => {
    const document = openApiDocument(TOOLS, { reads: READS });

    const documented = operationsOf(document).map(({ method, path }) => `${method.toUpperCase()} ${path}`);
    const operationIds = operationsOf(document).map(({ operation }) => operation.operationId);

    expect(documented.sort()).toEqual(
      apiRoutes(TOOLS, READS)
        .map((route) => `${route.method} ${route.path}`)
        .sort(),
    );
    expect(new Set(operationIds).size).toBe(operationIds.length);
  });

  it('documents a tool added to the registry without a line of its own', () => {
    const withFixture = openApiDocument(TOOLS_WITH_FIXTURE, { reads: READS });
    const without = openApiDocument(TOOLS, { reads: READS });

    const write = withFixture.paths['/tools/send_reminder']?.post;

    expect(without.paths['/tools/send_reminder']).toBeUndefined();
    expect(write).toMatchObject({
      operationId: 'send_reminder',
      description: 'Queue a reminder for a customer. Once per idempotency_key.',
      parameters: [{ $ref: '#/components/parameters/IdempotencyKey' }],
      requestBody: { required: true, content: { 'application/json': { schema: { $ref: expect.any(String) } } } },
      'x-retrysafe-idempotency': {
        client_key: true,
        client_key_ttl_seconds: 86_400,
        natural_key: null,
        dedupe_window_seconds: null,
      },
    });
    expect(withFixture.components.schemas.send_reminder_input).toMatchObject({
      required: ['idempotency_key', 'to', 'text'],
      properties: { to: { format: 'email' } },
    });
    expect(withFixture.paths['/tools/{tool}/operations/{key}']?.get?.parameters).toContainEqual(
      expect.objectContaining({
        name: 'tool',
        schema: expect.objectContaining({ enum: expect.arrayContaining(['send_reminder']) }),
      }),
    );
  });

  it('lists each write body as GET /tools and MCP list it, with no $schema line (MCP and OpenAPI 3.1 both default to 2020-12)', () => {
    const document = openApiDocument(TOOLS, { reads: READS });

    for (const tool of TOOLS) {
      const { input_schema, output_schema } = describeTool(tool);
      expect([input_schema.$schema, output_schema.$schema]).toEqual([undefined, undefined]);
      expect(document.components.schemas[`${tool.name}_input`]).toEqual(input_schema);
    }
  });

  it('gives each error status only the codes HTTP_STATUS maps to it', () => {
    const document = openApiDocument(TOOLS, { reads: READS });

    const misplaced = operationsOf(document).flatMap(({ path, method, operation }) =>
      Object.entries(operation.responses).flatMap(([status, response]) =>
        errorCodesOf(document, response)
          .filter((code) => String(HTTP_STATUS[code as HttpErrorCode]) !== status)
          .map((code) => `${method} ${path} ${status} ${code}`),
      ),
    );

    expect(misplaced).toEqual([]);
    expect(errorCodesOf(document, document.paths['/tools/refund']!.post!.responses['422']!)).toEqual(['conflict']);
  });

  it('takes the statuses from HTTP_STATUS itself: remapping a code there moves it in the document', () => {
    let remapped: OpenApiDocument | undefined;
    jest.isolateModules(() => {
      const status = jest.requireActual('../../lib/api/status');
      jest.doMock('../../lib/api/status', () => ({
        ...status,
        HTTP_STATUS: { ...status.HTTP_STATUS, conflict: 409 },
      }));
      const { openApiDocument: remappedDocument } =
        require('../../lib/openapi/document') as typeof import('../../lib/openapi/document');
      remapped = remappedDocument(TOOLS);
    });

    const responses = remapped!.paths['/tools/refund']!.post!.responses;

    expect(responses['422']).toBeUndefined();
    expect(errorCodesOf(remapped!, responses['409']!)).toEqual(['conflict']);
  });

  it('asks for the bearer JWT on every route but the public ones', () => {
    const document = openApiDocument(TOOLS, { reads: READS });
    const routes = apiRoutes(TOOLS, READS);

    const security = Object.fromEntries(
      operationsOf(document).map(({ path, method, operation }) => [
        `${method.toUpperCase()} ${path}`,
        operation.security,
      ]),
    );

    expect(document.components.securitySchemes.bearer).toEqual({
      type: 'http',
      scheme: 'bearer',
      bearerFormat: 'JWT',
      description: expect.any(String),
    });
    expect(security).toEqual(
      Object.fromEntries(
        routes.map((route) => [`${route.method} ${route.path}`, route.auth === 'public' ? [] : [{ bearer: [] }]]),
      ),
    );
  });

  it('places a recursive receipt whole: its references resolve inside the document', () => {
    const part: z.ZodMiniObject = z.strictObject({
      name: z.string(),
      get parts() {
        return z.optional(z.array(part));
      },
    });
    const tree = defineToolModule({
      name: 'build_tree',
      description: 'Test tool: answers a tree.',
      args: z.strictObject({ name: z.string() }),
      annotations: { destructiveHint: false, openWorldHint: false },
      receipt: part,
      access: {},
      async execute(args) {
        return { receipt: { name: args.name, parts: [{ name: 'leaf' }] }, replayed: false };
      },
    });
    const document = openApiDocument([tree]);
    const answer = documentSchemas(document).responseBody('post', '/tools/build_tree', 200);

    const result = validateOpenApi(document);

    expect(result).toEqual({ valid: true });
    const next = { action: 'none', message: 'Done.' };
    expect(
      answer({ ok: true, idempotent: false, key: 'k', receipt: { name: 'a', parts: [{ name: 'b' }] }, next }),
    ).toBe(true);
    expect(answer({ ok: true, idempotent: false, key: 'k', receipt: { name: 'a', parts: [{ nom: 'b' }] }, next })).toBe(
      false,
    );
  });

  it('refuses a tool named like a read, whose operationId would be taken twice', () => {
    const shadow = { ...TOOLS[0], name: 'get_invoice' } as unknown as (typeof TOOLS)[number];

    expect(() => openApiDocument([shadow], { reads: READS })).toThrow(/two operations are named get_invoice/);
  });
});

describe('the local API answers as its document says', () => {
  // A tool held in flight on demand, for the 202; the document is the one of the tools the API serves.
  const release = gate();
  const entered = gate();
  const heldNote = defineToolModule({
    name: 'held_note',
    description: 'Test tool: answers once released.',
    args: z.strictObject({ text: z.string() }),
    annotations: { destructiveHint: false, openWorldHint: false },
    access: {},
    async execute(args) {
      entered.open();
      await release.opened;
      return { receipt: { text: args.text }, replayed: false };
    },
  });
  const tools = [...TOOLS, heldNote];
  const document = openApiDocument(tools, { reads: READS });
  let schemas: DocumentSchemas;
  let api: TestApi;
  let token: string;
  let invoiceId: string;

  beforeAll(async () => {
    schemas = documentSchemas(document);
    api = await startTestApi({ tools });
    token = await api.token(newTenant());
    const created = await api.post('/tools/create_invoice', token, {
      idempotency_key: 'inv-1',
      customer: 'cus_ada',
      amount: 4_200,
    });
    invoiceId = created.body.receipt.invoice_id;
  });
  afterAll(async () => {
    release.open();
    await api.close();
  });

  /** The reply's body against the schema the document gives for its status, and its headers against the documented ones. */
  function expectDocumented(reply: Reply, method: Method, path: string): void {
    const validate = schemas.responseBody(method, path, reply.status);
    validate(reply.json);
    expect({ status: reply.status, errors: validate.errors ?? [] }).toEqual({ status: reply.status, errors: [] });
    const headers = schemas.response(method, path, reply.status).headers ?? {};
    for (const [name, header] of Object.entries(headers)) {
      const sent = reply.headers.get(name);
      if (header.required) expect({ header: name, sent }).toEqual({ header: name, sent: expect.any(String) });
      if (sent === null) continue;
      const value = header.schema.type === 'integer' ? Number(sent) : sent;
      expect({ header: name, valid: schemas.accepts(header.schema, value) }).toEqual({ header: name, valid: true });
    }
  }

  const invoice = { customer: 'cus_ada', amount: 4_200 };
  const mcpAccept = { accept: 'application/json, text/event-stream' };
  const initialize = {
    jsonrpc: '2.0',
    id: 1,
    method: 'initialize',
    params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'openapi-test', version: '1' } },
  };

  it.each<{ label: string; route: string; status: number; act: () => Promise<Reply> }>([
    {
      label: 'a first execution',
      route: 'POST /tools/create_invoice',
      status: 200,
      act: () => api.post('/tools/create_invoice', token, { idempotency_key: 'a1', ...invoice }),
    },
    {
      label: 'a key sent in the Idempotency-Key header, quoted',
      route: 'POST /tools/create_invoice',
      status: 200,
      act: () => api.post('/tools/create_invoice', token, invoice, { 'idempotency-key': '"h1"' }),
    },
    {
      label: 'an unknown field',
      route: 'POST /tools/create_invoice',
      status: 400,
      act: () => api.post('/tools/create_invoice', token, { idempotency_key: 'b1', ...invoice, tenant: 'x' }),
    },
    {
      label: 'malformed JSON',
      route: 'POST /tools/create_invoice',
      status: 400,
      act: () => api.request('POST', '/tools/create_invoice', { token, raw: '{"idempotency_key":' }),
    },
    {
      label: 'no token',
      route: 'POST /tools/create_invoice',
      status: 401,
      act: () => api.post('/tools/create_invoice', '', { idempotency_key: 'c1', ...invoice }),
    },
    {
      label: 'a refund of an unknown invoice',
      route: 'POST /tools/refund',
      status: 404,
      act: () => api.post('/tools/refund', token, { idempotency_key: 'd1', invoice_id: 'inv_missing', amount: 1 }),
    },
    {
      label: 'a body over the limit',
      route: 'POST /tools/create_invoice',
      status: 413,
      act: () =>
        api.post('/tools/create_invoice', token, { idempotency_key: 'e1', ...invoice, customer: 'x'.repeat(70_000) }),
    },
    { label: 'the listing', route: 'GET /tools', status: 200, act: () => api.get('/tools', token) },
    {
      label: 'a completed operation',
      route: 'GET /tools/{tool}/operations/{key}',
      status: 200,
      act: () => api.get('/tools/create_invoice/operations/inv-1', token),
    },
    {
      label: 'an unknown operation',
      route: 'GET /tools/{tool}/operations/{key}',
      status: 404,
      act: () => api.get('/tools/create_invoice/operations/nope', token),
    },
    {
      label: 'an invoice',
      route: 'GET /invoices/{invoice_id}',
      status: 200,
      act: () => api.get(`/invoices/${invoiceId}`, token),
    },
    {
      label: 'an unknown invoice',
      route: 'GET /invoices/{invoice_id}',
      status: 404,
      act: () => api.get('/invoices/inv_missing', token),
    },
    {
      label: 'a ticket',
      route: 'GET /tickets/{ticket_key}',
      status: 200,
      async act() {
        const created = await api.post('/tools/create_ticket', token, {
          idempotency_key: 't1',
          title: 'Printer on fire',
        });
        return api.get(`/tickets/${created.body.receipt.ticket_key}`, token);
      },
    },
    { label: 'the health check, without a token', route: 'GET /health', status: 200, act: () => api.get('/health') },
    {
      label: 'the MCP resource metadata, without a token',
      route: 'GET /.well-known/oauth-protected-resource/mcp',
      status: 200,
      act: () => api.get('/.well-known/oauth-protected-resource/mcp'),
    },
    {
      label: 'MCP without a token',
      route: 'POST /mcp',
      status: 401,
      act: () => api.post('/mcp', '', initialize, mcpAccept),
    },
    {
      label: 'MCP initialize',
      route: 'POST /mcp',
      status: 200,
      act: () => api.post('/mcp', token, initialize, mcpAccept),
    },
    {
      label: 'MCP with malformed JSON-RPC',
      route: 'POST /mcp',
      status: 400,
      act: () => api.request('POST', '/mcp', { token, raw: '{', headers: mcpAccept }),
    },
    { label: 'GET /mcp', route: 'GET /mcp', status: 405, act: () => api.get('/mcp', token) },
  ])('$label: $status, as documented for $route', async ({ route, status, act }) => {
    const [method, path] = route.split(' ') as [string, string];

    const reply = await act();

    expect(reply.status).toBe(status);
    expectDocumented(reply, method.toLowerCase() as Method, path);
  });

  it('a replay: the first receipt, with Idempotent-Replayed', async () => {
    const body = { idempotency_key: 'r1', ...invoice };
    const first = await api.post('/tools/create_invoice', token, body);

    const replay = await api.post('/tools/create_invoice', token, body);

    expect(first.headers.get('idempotent-replayed')).toBeNull();
    expect(replay.headers.get('idempotent-replayed')).toBe('true');
    expect(replay.body).toEqual({ ...first.body, idempotent: true });
    expectDocumented(replay, 'post', '/tools/create_invoice');
  });

  it('a conflict: the same key with other arguments', async () => {
    await api.post('/tools/create_invoice', token, { idempotency_key: 'x1', ...invoice });

    const conflict = await api.post('/tools/create_invoice', token, { idempotency_key: 'x1', ...invoice, amount: 1 });

    expect(conflict.status).toBe(422);
    expectDocumented(conflict, 'post', '/tools/create_invoice');
  });

  it('a call still in flight: 202 pending, with Retry-After', async () => {
    const body = { idempotency_key: 'p1', text: 'hold' };
    const first = api.post('/tools/held_note', token, body);
    await entered.opened;

    const pending = await api.post('/tools/held_note', token, body);
    release.open();
    const done = await first;

    expect(pending.status).toBe(202);
    expectDocumented(pending, 'post', '/tools/held_note');
    expectDocumented(done, 'post', '/tools/held_note');
  });

  it('takes the bodies the document describes, and refuses what it refuses', async () => {
    const accepted = { idempotency_key: 'v1', ...invoice };
    const refused = { idempotency_key: 'v2', customer: 'cus_ada', amount: -1 };
    const validate = schemas.requestBody('post', '/tools/create_invoice');

    const [ok, bad] = [
      await api.post('/tools/create_invoice', token, accepted),
      await api.post('/tools/create_invoice', token, refused),
    ];

    expect([validate(accepted), ok.status]).toEqual([true, 200]);
    expect([validate(refused), bad.status]).toEqual([false, 400]);
  });

  it('lists in GET /tools the same write bodies the document gives', async () => {
    const listing = await api.get('/tools', token);

    for (const listed of listing.body.tools as Array<{ name: string; input_schema: JsonObject }>) {
      const { $schema: _dialect, ...schema } = listed.input_schema;
      expect(document.components.schemas[`${listed.name}_input`]).toEqual(schema);
    }
  });
});
