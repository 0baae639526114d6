// Review of issue 35, deliverable 3 (AgentCore Gateway): failing tests, each one a defect found by a
// fresh-eye review (h-review35). The handlers are the deployed entry files on functions the construct
// made gateway targets (`RETRYSAFE_AGENTCORE_TARGET`), the interceptor as deployed, on DynamoDB Local.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Context } from 'aws-lambda';
import { READS } from '../../app/reads';
import { TOOLS } from '../../app/tools';
import { CALLER_KEY_SECRET_VAR } from '../../lib/agentcore/caller-key';
import { type InterceptorInput, type InterceptorOutput, interceptRequest } from '../../lib/agentcore/interceptor';
import { gatewayToolDefinitions } from '../../lib/agentcore/tool-schema';
import type { GatewayToolHandler } from '../../lib/agentcore/write';
import { VerifierUnavailableError } from '../../lib/auth/token-claims';
import { heldSendEmail } from '../helpers/held-send-email';
import { createWorld, deadline, newTenant, type World } from '../helpers/world';

// What the construct sets on a gateway's target (and folds into its bundle).
process.env.RETRYSAFE_AGENTCORE_TARGET = 'true';
/** The caller-signing key the secret holds (served to the targets by a local Secrets Manager). */
const KEY = 'caller-key-0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOP';

let world: World;
let secrets: Server;
beforeAll(async () => {
  world = createWorld();
  // Secrets Manager's JSON protocol, answering GetSecretValue with the key (as agentcore-gateway.test.ts does).
  secrets = createServer((request, response) => {
    request.resume();
    request.on('end', () => {
      response.writeHead(200, { 'content-type': 'application/x-amz-json-1.1' });
      response.end(JSON.stringify({ ARN: 'arn:key', Name: 'key', SecretString: KEY }));
    });
  });
  await new Promise<void>((resolve) => secrets.listen(0, '127.0.0.1', resolve));
  process.env.AWS_ENDPOINT_URL_SECRETS_MANAGER = `http://127.0.0.1:${(secrets.address() as AddressInfo).port}`;
  process.env[CALLER_KEY_SECRET_VAR] = 'arn:key';
});
afterAll(async () => {
  await new Promise((resolve) => secrets.close(resolve));
  await world.destroy();
});

/** The handler a tool's entry file exports, as the gateway invokes it. */
async function gatewayTool(name: string): Promise<GatewayToolHandler> {
  return ((await import(`../../lambdas/${name}`)) as { handler: GatewayToolHandler }).handler;
}

function gatewayName(tool: string): string {
  return `${tool.replaceAll('_', '-')}___${tool}`;
}

/** A `tools/call` as the gateway hands it to the interceptor (`passRequestHeaders: true`). */
function toolsCall(name: string, args: unknown): InterceptorInput {
  return {
    interceptorInputVersion: '1.0',
    mcp: {
      gatewayRequest: {
        headers: { Authorization: 'Bearer token-of-eve' },
        body: { jsonrpc: '2.0', id: 7, method: 'tools/call', params: { name, arguments: args } },
      },
    },
  };
}

function forwarded(output: InterceptorOutput): Record<string, unknown> {
  if (!('transformedGatewayRequest' in output.mcp)) throw new Error(`refused: ${JSON.stringify(output)}`);
  return (output.mcp.transformedGatewayRequest.body as { params: { arguments: Record<string, unknown> } }).params
    .arguments;
}

describe('review 35: a gateway target never takes a caller from the agent’s arguments', () => {
  // docs/deploy.md, "What cannot be checked without AWS": "the client-context key: the function reads
  // custom.bedrockAgentCoreToolName only ... (one AWS tutorial writes bedrockagentcoreToolName); an
  // invocation without it is taken for API Gateway's and answered 401 (no JWT claims) — refused either
  // way, never run". The event of such an invocation is the agent's arguments, and the agent can write
  // API Gateway's `requestContext.authorizer.jwt.claims` and `body` into them: it runs as anyone.
  it('refuses a gateway invocation whose client context lacks bedrockAgentCoreToolName, even when the agent wrote API Gateway’s claims into its arguments', async () => {
    const eve = newTenant();
    const victim = newTenant();
    const invoice = await world.seedInvoice(victim);
    // Prepare: what the agent (eve, of her own tenant) sends as the refund's arguments.
    const agentArgs = {
      idempotency_key: 'forged-1',
      invoice_id: invoice.invoice_id,
      amount: invoice.amount,
      requestContext: { authorizer: { jwt: { claims: { tenant_id: victim, sub: 'ada' } } } },
      body: JSON.stringify({ idempotency_key: 'forged-1', invoice_id: invoice.invoice_id, amount: invoice.amount }),
    };
    const output = await interceptRequest(toolsCall(gatewayName('refund'), agentArgs), {
      verifyToken: async () => ({ tenant_id: eve, sub: 'eve' }),
      callerKey: async () => KEY,
      env: {},
    });
    // The gateway's invocation, its tool name under the spelling one AWS tutorial gives.
    const context = {
      ...deadline(),
      clientContext: { custom: { bedrockagentcoreToolName: gatewayName('refund') } },
    } as unknown as Context;

    // Act
    await (await gatewayTool('refund'))(forwarded(output), context);

    // Assess: nothing moved in the victim's tenant, no record claimed there.
    expect(await world.ledgerRows(victim)).toEqual([]);
    expect(await world.idempotencyRecordKeys(victim)).toEqual([]);
  });

  it('refuses a read through the gateway without bedrockAgentCoreToolName in its client context: the agent’s path parameters and claims read another tenant’s invoice', async () => {
    const eve = newTenant();
    const victim = newTenant();
    const invoice = await world.seedInvoice(victim);
    const agentArgs = {
      invoice_id: invoice.invoice_id,
      pathParameters: { invoice_id: invoice.invoice_id },
      requestContext: { authorizer: { jwt: { claims: { tenant_id: victim, sub: 'ada' } } } },
    };
    const output = await interceptRequest(toolsCall(gatewayName('get_invoice'), agentArgs), {
      verifyToken: async () => ({ tenant_id: eve, sub: 'eve' }),
      callerKey: async () => KEY,
      env: {},
    });
    const context = {
      ...deadline(),
      clientContext: { custom: { bedrockagentcoreToolName: gatewayName('get_invoice') } },
    } as unknown as Context;

    const answer = (await (
      await gatewayTool('get_invoice')
    )(forwarded(output), context)) as unknown as {
      body?: string;
    };

    // The victim's invoice must not reach eve in any shape (an HTTP response's body or the answer itself).
    expect(JSON.stringify(answer)).not.toContain(invoice.invoice_id);
  });
});

describe('review 35: a pending answer through the gateway names a way to ask again that the gateway serves', () => {
  it('does not point the agent at get_operation, which no target lists', async () => {
    const tenant = newTenant();
    const { tool: held, started, release } = heldSendEmail();
    const args = { idempotency_key: 'held-1', to: 'a@example.com', subject: 's', body: 'b' };
    const running = world.runtime.invoke(held, { tenant, user: 'ada' }, args, deadline(5_000));
    await started.opened;
    const signed = await interceptRequest(toolsCall(gatewayName('send_email'), args), {
      verifyToken: async () => ({ tenant_id: tenant, sub: 'ada' }),
      callerKey: async () => KEY,
      env: {},
    });

    const context = {
      ...deadline(1_500),
      clientContext: { custom: { bedrockAgentCoreToolName: gatewayName('send_email') } },
    } as unknown as Context;
    const answer = await (await gatewayTool('send_email'))(forwarded(signed), context).catch((error) => error);
    release.open();
    await running;

    const listed = gatewayToolDefinitions(TOOLS, READS).map(({ name }) => name);
    expect(answer).toMatchObject({ ok: false, status: 'pending' });
    const poll = (answer as { next: { poll?: { tool: string } } }).next.poll;
    expect(poll === undefined || listed.includes(poll.tool)).toBe(true);
  });
});

describe('review 35: the interceptor’s answers say when to ask again', () => {
  // The MCP function answers a verifier outage with the verifier's own wait (lib/mcp/http.ts,
  // `verifierUnavailable`: `error.retryAfterSeconds * 1000`); the interceptor drops it.
  it('tells the agent the verifier’s own wait when the issuer’s keys cannot be fetched', async () => {
    const output = await interceptRequest(toolsCall(gatewayName('refund'), { idempotency_key: 'k' }), {
      verifyToken: async () => {
        throw new VerifierUnavailableError('the issuer signing keys cannot be fetched', 45);
      },
      callerKey: async () => KEY,
      env: {},
    });

    const response = (
      output.mcp as { transformedGatewayResponse: { body: { result: { structuredContent: unknown } } } }
    ).transformedGatewayResponse;
    expect(response.body.result.structuredContent).toMatchObject({
      ok: false,
      error: { code: 'unavailable' },
      next: { action: 'call_again', after_ms: 45_000 },
    });
  });
});
