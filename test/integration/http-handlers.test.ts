import type { APIGatewayProxyEventV2WithJWTAuthorizer } from 'aws-lambda';
import { handleToolWrite } from '../../lib/http/write';
import { createToolRuntime } from '../../lib/lambda/runtime';
import { keyHash } from '../../lib/observability/call-log';
import { capturedLogger } from '../helpers/captured-logger';
import { noteTool } from '../helpers/tools';
import { createWorld, deadline, newTenant, type World } from '../helpers/world';

let world: World;
beforeAll(() => {
  world = createWorld();
});
afterAll(() => world.destroy());

function event(tenant: string, body: unknown): APIGatewayProxyEventV2WithJWTAuthorizer {
  return {
    headers: {},
    body: JSON.stringify(body),
    isBase64Encoded: false,
    requestContext: { authorizer: { jwt: { claims: { tenant_id: tenant, sub: 'ada' }, scopes: [] } } },
  } as unknown as APIGatewayProxyEventV2WithJWTAuthorizer;
}

describe('handleToolWrite', () => {
  it('logs one JSON line per call with tool, tenant, transport, outcome, key hash and its metrics — never the arguments', async () => {
    const tenant = newTenant();
    const { tool } = noteTool('send_note');
    const body = { idempotency_key: 'secret-key', text: 'private words' };
    const captured = capturedLogger();

    try {
      const runtime = createToolRuntime(
        { client: world.client, logger: captured.logger },
        { ...process.env, POWERTOOLS_METRICS_DISABLED: 'false' },
      );
      const dependencies = { runtime, tool };
      await handleToolWrite(dependencies, event(tenant, body), deadline());
      await handleToolWrite(dependencies, event(tenant, body), deadline());
    } finally {
      captured.restore();
    }

    // One line per call: the log fields and the call's embedded metrics (tenant a field, never a dimension).
    const metrics = expect.objectContaining({
      calls: 1,
      latency: expect.any(Number),
      _aws: expect.objectContaining({
        CloudWatchMetrics: [expect.objectContaining({ Dimensions: [['service', 'tool', 'outcome']] })],
      }),
    });
    expect(captured.lines).toEqual([
      expect.objectContaining({
        message: 'tool call',
        tool: 'send_note',
        tenant,
        transport: 'rest',
        outcome: 'executed',
        key_hash: keyHash('secret-key'),
      }),
      expect.objectContaining({
        message: 'tool call',
        tool: 'send_note',
        tenant,
        transport: 'rest',
        outcome: 'replayed_client_key',
        key_hash: keyHash('secret-key'),
      }),
    ]);
    for (const line of captured.lines) expect(line).toEqual(metrics);
    const text = JSON.stringify(captured.lines);
    expect(text).not.toContain('private words');
    expect(text).not.toContain('secret-key');
  });

  it('answers 500 with a generic message when a tool fails unexpectedly, leaking nothing', async () => {
    const { tool } = noteTool('send_note', async () => {
      throw new Error('SELECT * FROM users -- at /srv/app/db.ts:42');
    });

    const response = await handleToolWrite(
      { runtime: world.runtime, tool },
      event(newTenant(), { idempotency_key: 'k1', text: 'x' }),
      deadline(),
    );

    expect(response.statusCode).toBe(500);
    expect(JSON.parse(response.body)).toEqual({
      ok: false,
      error: { code: 'internal', message: 'internal error' },
      next: { action: 'call_again', after_ms: expect.any(Number), message: expect.any(String) },
    });
  });
});
