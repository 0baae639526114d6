// Review of issue 35, deliverable 3 (AgentCore Gateway): failing tests, each one a defect found by a
// fresh-eye review (h-review35). The handlers are the deployed entry files on functions the construct
// made gateway targets (`RETRYSAFE_AGENTCORE_TARGET`), the interceptor as deployed, on DynamoDB Local.
import type { Context } from 'aws-lambda';
import { type InterceptorInput, type InterceptorOutput, interceptRequest } from '../../lib/agentcore/interceptor';
import type { GatewayToolHandler } from '../../lib/agentcore/write';
import { VerifierUnavailableError } from '../../lib/auth/token-claims';
import { createWorld, deadline, newTenant, type World } from '../helpers/world';

// What the construct sets on a gateway's target (and folds into its bundle).
process.env.RETRYSAFE_AGENTCORE_TARGET = 'true';
/** The caller-signing key the secret holds (the interceptor's; a target never reads it in these tests). */
const KEY = 'caller-key-0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOP';

let world: World;
beforeAll(() => {
  world = createWorld();
});
afterAll(async () => {
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
