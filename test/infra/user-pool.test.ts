import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { App, Validations } from 'aws-cdk-lib';
import { Annotations, Match, Template } from 'aws-cdk-lib/assertions';
import { AwsSolutionsChecks } from 'cdk-nag';
import { exportJWK, generateKeyPair, type JWK, type JWTPayload, SignJWT } from 'jose';
import { RetrysafeStack, type RetrysafeStackProps } from '../../app/stack';
import { createJwksVerifier } from '../../lib/auth/jwks-verifier';
import { identityFromTokenClaims, tokenRefusal } from '../../lib/auth/token-claims';

// biome-ignore lint/suspicious/noExplicitAny: CloudFormation properties are asserted structurally
type Resources = Record<string, { Type: string; Properties: Record<string, any> }>;

/** The stack as `cdk synth -c userPool=true` builds it, without bundling (these tests read no bundle). */
function synthesize(props: RetrysafeStackProps = { userPool: true }) {
  const app = new App({ context: { 'aws:cdk:bundling-stacks': [] } });
  const stack = new RetrysafeStack(app, 'Retrysafe', props);
  Validations.of(app).addPlugins(new AwsSolutionsChecks(app));
  return { app, stack, template: Template.fromStack(stack) };
}

let stack: RetrysafeStack;
let template: Template;
let resources: Resources;
beforeAll(() => {
  ({ stack, template } = synthesize());
  resources = template.toJSON().Resources as Resources;
});

/** The logical id of the construct's CloudFormation resource. */
function logicalId(construct: { node: { defaultChild?: unknown } }): string {
  return stack.getLogicalId(construct.node.defaultChild as never);
}

function only(type: string): Resources[string] {
  const found = Object.values(resources).filter((r) => r.Type === type);
  expect(found).toHaveLength(1);
  return found[0]!;
}

describe('the user pool the stack creates (userPool: true)', () => {
  it('is a pool nobody signs up to, with no tenant attribute anyone could write, retained with the tables', () => {
    template.hasResource('AWS::Cognito::UserPool', {
      DeletionPolicy: 'Retain',
      Properties: Match.objectLike({
        AdminCreateUserConfig: { AllowAdminCreateUserOnly: true },
        UserPoolTier: 'ESSENTIALS',
        // No custom attribute: the tenant is no attribute, it is the client a token was issued to.
        Schema: Match.absent(),
      }),
    });
  });

  it('has a resource server whose scope the agents ask for', () => {
    template.hasResourceProperties('AWS::Cognito::UserPoolResourceServer', {
      Identifier: 'retrysafe',
      Scopes: [{ ScopeName: 'tools', ScopeDescription: Match.anyValue() }],
      UserPoolId: { Ref: logicalId(stack.agentUserPool!.userPool) },
    });
  });

  it('has a prefix domain unique to the stack, for its token endpoint', () => {
    const domain = only('AWS::Cognito::UserPoolDomain');

    expect(JSON.stringify(domain.Properties.Domain)).toContain('"AWS::StackId"');
    expect(domain.Properties.Domain['Fn::Join'][1][0]).toBe('retrysafe');
  });

  it('gives agents one machine-to-machine client: a secret, the client-credentials grant alone, the tools scope', () => {
    const client = only('AWS::Cognito::UserPoolClient');

    expect(client.Properties).toMatchObject({
      GenerateSecret: true,
      AllowedOAuthFlowsUserPoolClient: true,
      AllowedOAuthFlows: ['client_credentials'],
      AllowedOAuthScopes: [{ 'Fn::Join': ['', [{ Ref: logicalId(stack.agentUserPool!.resourceServer) }, '/tools']] }],
      AccessTokenValidity: 60,
      TokenValidityUnits: { AccessToken: 'minutes' },
    });
  });

  it('lets nobody sign in through the client, so nothing — a tenant least of all — is written through it', () => {
    const client = only('AWS::Cognito::UserPoolClient');

    // No user flow (SRP, password, custom, choice-based): only refresh, which client credentials never issue.
    expect(client.Properties.ExplicitAuthFlows).toEqual(['ALLOW_REFRESH_TOKEN_AUTH']);
    expect(client.Properties.AllowedOAuthFlows).not.toContain('code');
    expect(client.Properties.AllowedOAuthFlows).not.toContain('implicit');
  });

  it('reads the tenant from client_id, the claim Cognito writes from the authenticated client, in every function', () => {
    const functions = Object.values(resources).filter((r) => r.Type === 'AWS::Lambda::Function');

    expect(functions.length).toBeGreaterThan(0);
    for (const fn of functions) {
      expect(fn.Properties.Environment.Variables.TENANT_CLAIM).toBe('client_id');
    }
  });

  it('makes the JWT authorizer trust the pool (https issuer) and its client', () => {
    template.hasResourceProperties('AWS::ApiGatewayV2::Authorizer', {
      AuthorizerType: 'JWT',
      JwtConfiguration: {
        // ProviderURL is the issuer without its scheme.
        Issuer: {
          'Fn::Join': ['', ['https://', { 'Fn::GetAtt': [logicalId(stack.agentUserPool!.userPool), 'ProviderURL'] }]],
        },
        Audience: [{ Ref: logicalId(stack.agentUserPool!.agentClient) }],
      },
    });
  });

  it('makes the MCP function check the same issuer and audience as the authorizer', () => {
    const authorizer = only('AWS::ApiGatewayV2::Authorizer');
    const mcp = resources[logicalId(stack.functions.mcp)]!.Properties.Environment.Variables;

    expect(mcp.JWT_ISSUER).toEqual(authorizer.Properties.JwtConfiguration.Issuer);
    expect([mcp.JWT_AUDIENCE]).toEqual(authorizer.Properties.JwtConfiguration.Audience);
  });

  it('outputs the token URL, the client id, the pool id and the scopes', () => {
    const outputs = template.toJSON().Outputs;

    expect(outputs.TokenUrl.Value).toEqual({
      'Fn::Join': [
        '',
        [
          'https://',
          { Ref: logicalId(stack.agentUserPool!.domain) },
          '.auth.',
          { Ref: 'AWS::Region' },
          '.amazoncognito.com/oauth2/token',
        ],
      ],
    });
    expect(outputs.AgentClientId.Value).toEqual({ Ref: logicalId(stack.agentUserPool!.agentClient) });
    expect(outputs.UserPoolId.Value).toEqual({ Ref: logicalId(stack.agentUserPool!.userPool) });
    expect(outputs.TokenScopes.Value).toBe('retrysafe/tools');
  });

  it('warns of no placeholder issuer, and cdk-nag finds nothing unacknowledged', () => {
    const { app, stack: withPool } = synthesize();

    expect(() => app.synth()).not.toThrow();
    expect(Annotations.fromStack(withPool).findWarning('*', Match.stringLikeRegexp('placeholder'))).toEqual([]);
  });

  it('creates no pool unless asked', () => {
    const { template: without } = synthesize({ issuer: 'https://issuer.example' });

    without.resourceCountIs('AWS::Cognito::UserPool', 0);
    without.resourceCountIs('AWS::Cognito::UserPoolClient', 0);
  });
});

describe('the stack’s props', () => {
  it('refuses, in one error, a user pool with an issuer of its own and a reserved concurrency that is no count', () => {
    const props = { userPool: true, issuer: 'https://elsewhere.example', mcpReservedConcurrency: 0 };

    expect(() => synthesize(props as unknown as RetrysafeStackProps)).toThrow(
      /userPool: .*issuer cannot be given with it; mcpReservedConcurrency: 0 is neither/,
    );
  });

  it.each([
    ['none', undefined],
    [8, 8],
  ] as const)('reserves %s for the MCP function when asked', (asked, reserved) => {
    const { stack: custom, template: customTemplate } = synthesize({ userPool: true, mcpReservedConcurrency: asked });
    const mcp = (customTemplate.toJSON().Resources as Resources)[
      custom.getLogicalId(custom.functions.mcp.node.defaultChild as never)
    ]!;

    expect(mcp.Properties.ReservedConcurrentExecutions).toBe(reserved);
  });
});

/**
 * What the deployed MCP function does with the pool's tokens. A client-credentials access token from
 * Cognito carries no `aud`: its client is `client_id` (and `sub`). The verifier must accept it for that
 * client as the JWT authorizer does, and the tenant comes out of the one code path every function uses.
 */
describe('a client-credentials access token, as Cognito issues it', () => {
  const issuer = 'https://cognito-idp.eu-west-1.amazonaws.com/eu-west-1_example';
  const clientId = '4k2example7client';
  let jwks: Server;
  let jwksUrl: string;
  let sign: (claims: JWTPayload) => Promise<string>;
  beforeAll(async () => {
    const { privateKey, publicKey } = await generateKeyPair('RS256');
    const publicJwk: JWK = { ...(await exportJWK(publicKey)), kid: 'k1', alg: 'RS256', use: 'sig' };
    jwks = createServer((_request, response) => {
      response.setHeader('content-type', 'application/json');
      response.end(JSON.stringify({ keys: [publicJwk] }));
    });
    await new Promise<void>((resolve) => jwks.listen(0, '127.0.0.1', resolve));
    jwksUrl = `http://127.0.0.1:${(jwks.address() as AddressInfo).port}/.well-known/jwks.json`;
    sign = (claims) =>
      new SignJWT(claims)
        .setProtectedHeader({ alg: 'RS256', kid: 'k1' })
        .setIssuer(issuer)
        .setIssuedAt()
        .setExpirationTime('1h')
        .sign(privateKey);
  });
  afterAll(() => new Promise((resolve) => jwks.close(resolve)));

  /** Cognito's client-credentials access token: no `aud`; `sub` and `client_id` name the client. */
  const accessToken = (client: string, extra: JWTPayload = {}) =>
    sign({ sub: client, client_id: client, token_use: 'access', scope: 'retrysafe/tools', ...extra });

  it('is accepted for its client, and its tenant and user are that client', async () => {
    const verify = createJwksVerifier({ issuer, audience: clientId, jwksUrl });

    const claims = await verify(await accessToken(clientId));

    expect(identityFromTokenClaims(claims, { TENANT_CLAIM: 'client_id' })).toEqual({
      tenant: clientId,
      user: clientId,
    });
  });

  it('is refused for another client', async () => {
    const verify = createJwksVerifier({ issuer, audience: clientId, jwksUrl });

    await expect(verify(await accessToken('another-client'))).rejects.toThrow(/aud/);
  });

  it('is judged by aud when it has one, as the JWT authorizer judges it', async () => {
    const verify = createJwksVerifier({ issuer, audience: clientId, jwksUrl });

    await expect(verify(await accessToken(clientId, { aud: 'someone-else' }))).rejects.toThrow(/aud/);
    await expect(verify(await sign({ sub: 'user-1', aud: [clientId, 'x'] }))).resolves.toMatchObject({ sub: 'user-1' });
  });

  it.each([
    ['sub', { sub: 42 }],
    ['tenant_id', { sub: 'user-1', tenant_id: ['a', 'b'] }],
  ])('is refused, naming the claim, when its %s is not a string (the deployed MCP verifier)', async (claim, claims) => {
    const verify = createJwksVerifier({ issuer, audience: clientId, jwksUrl });

    const refused = await verify(await sign({ aud: clientId, ...claims } as JWTPayload)).catch((error) => error);

    expect(refused).toMatchObject({ code: 'ERR_CLAIM_NOT_STRING', claim });
    expect(tokenRefusal(refused)).toBe(
      `the token's ${claim} claim is not a string; a tenant and a user (sub) are strings`,
    );
  });
});
