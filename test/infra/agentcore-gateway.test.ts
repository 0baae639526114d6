// The example stack with `agentCoreGateway` (`cdk synth -c agentCoreGateway=true`): one assertion per promise
// the construct makes about the AgentCore Gateway. Synthesized without bundling (the template alone).
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { App, Validations } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { AwsSolutionsChecks } from 'cdk-nag';
import * as z from 'zod/mini';
import { READS } from '../../app/reads';
import { RetrysafeStack, type RetrysafeStackProps } from '../../app/stack';
import { TOOLS } from '../../app/tools';
import { CALLER_KEY_SECRET_VAR } from '../../lib/agentcore/caller-key';
import { gatewayToolDefinitions } from '../../lib/agentcore/tool-schema';
import { AGENTCORE_TARGET_VAR } from '../../lib/infra/agentcore-gateway';
import { packageEntryFile, retrysafePropProblems } from '../../lib/infra/retrysafe';
import { defineToolModule } from '../../lib/tools/tool-module';

// biome-ignore lint/suspicious/noExplicitAny: CloudFormation properties are asserted structurally
type Resources = Record<string, { Type: string; Properties: Record<string, any> }>;

const ISSUER = 'https://cognito-idp.eu-west-1.amazonaws.com/eu-west-1_example';

/** A function as far as these assertions read it: its resource and its role. */
interface NodejsFunctionLike {
  readonly node: { readonly defaultChild: unknown };
  readonly role: { readonly node: { readonly defaultChild: unknown } };
}

function synthesize(props: RetrysafeStackProps = { issuer: ISSUER, audience: 'client-123', agentCoreGateway: true }) {
  const app = new App({
    outdir: mkdtempSync(join(tmpdir(), 'retrysafe-agentcore-')),
    context: { 'aws:cdk:bundling-stacks': [] },
  });
  const stack = new RetrysafeStack(app, 'Retrysafe', props);
  Validations.of(app).addPlugins(new AwsSolutionsChecks(app));
  const template = Template.fromStack(stack);
  return { app, stack, template, resources: template.toJSON().Resources as Resources };
}

let stack: RetrysafeStack;
let template: Template;
let resources: Resources;
beforeAll(() => {
  ({ stack, template, resources } = synthesize());
});

const ofType = (type: string, from: Resources = resources) =>
  Object.entries(from).filter(([, resource]) => resource.Type === type);

const functionId = (name: string, of: RetrysafeStack = stack) =>
  of.getLogicalId(of.functions[name]!.node.defaultChild as never);

const gatewayOf = (from: Resources = resources) => ofType('AWS::BedrockAgentCore::Gateway', from)[0]![1].Properties;

describe('the AgentCore Gateway (agentCoreGateway)', () => {
  it('is not deployed without the flag: no gateway, no target, no interceptor', () => {
    const { stack: plain, resources: without } = synthesize({ issuer: ISSUER, audience: 'client-123' });

    expect(
      Object.values(without)
        .map((resource) => resource.Type)
        .filter((type) => type.startsWith('AWS::BedrockAgentCore::')),
    ).toEqual([]);
    expect(plain.retrysafe.agentCoreGateway).toBeUndefined();
    expect(plain.node.tryFindChild('AgentCoreGatewayUrl')).toBeUndefined();
  });

  it('checks tokens with the issuer and audience the HTTP API’s JWT authorizer checks (CUSTOM_JWT, by aud)', () => {
    const [[, authorizer]] = ofType('AWS::ApiGatewayV2::Authorizer') as [[string, Resources[string]]];
    const { Issuer, Audience } = authorizer.Properties.JwtConfiguration;

    expect(gatewayOf()).toMatchObject({
      ProtocolType: 'MCP',
      AuthorizerType: 'CUSTOM_JWT',
      AuthorizerConfiguration: {
        CustomJWTAuthorizer: { DiscoveryUrl: `${Issuer}/.well-known/openid-configuration`, AllowedAudience: Audience },
      },
    });
    expect(gatewayOf().AuthorizerConfiguration.CustomJWTAuthorizer.AllowedClients).toBeUndefined();
  });

  it('checks a Cognito access token (no aud) by its client_id with the stack’s own user pool', () => {
    const { resources: pooled } = synthesize({ userPool: true, agentCoreGateway: true });
    const [[, authorizer]] = ofType('AWS::ApiGatewayV2::Authorizer', pooled) as [[string, Resources[string]]];

    expect(gatewayOf(pooled).AuthorizerConfiguration.CustomJWTAuthorizer).toEqual({
      DiscoveryUrl: {
        'Fn::Join': [
          '',
          [...authorizer.Properties.JwtConfiguration.Issuer['Fn::Join'][1], '/.well-known/openid-configuration'],
        ],
      },
      AllowedClients: authorizer.Properties.JwtConfiguration.Audience,
    });
  });

  it('has one Lambda target per tool and per read, on its own function, invoked with the gateway’s role', () => {
    const targets = ofType('AWS::BedrockAgentCore::GatewayTarget').map(([, target]) => target.Properties);
    const names = [...TOOLS, ...READS].map((entry) => entry.name);

    expect(
      targets.map((target) => [target.TargetConfiguration.Mcp.Lambda.LambdaArn['Fn::GetAtt'][0], target.Name]).sort(),
    ).toEqual(names.map((name) => [functionId(name), name.replaceAll('_', '-')]).sort());
    for (const target of targets) {
      expect(target.CredentialProviderConfigurations).toEqual([{ CredentialProviderType: 'GATEWAY_IAM_ROLE' }]);
      expect(target.GatewayIdentifier).toEqual({ 'Fn::GetAtt': [expect.any(String), 'GatewayIdentifier'] });
    }
  });

  it.each(TOOLS.map((tool) => [tool.name, tool] as const))(
    'lists %s with its own schema: its arguments, their types and descriptions, idempotency_key required',
    (name, tool) => {
      const target = ofType('AWS::BedrockAgentCore::GatewayTarget').find(
        ([, candidate]) => candidate.Properties.Name === name.replaceAll('_', '-'),
      )![1];
      const [listed] = target.Properties.TargetConfiguration.Mcp.Lambda.ToolSchema.InlinePayload;
      // The tool's own zod schema, read here without the app's derivation (describeTool).
      const own = z.toJSONSchema(tool.args, { io: 'input' }) as {
        properties: Record<string, { type: string; description?: string }>;
        required?: string[];
      };

      expect(listed.Name).toBe(name);
      expect(listed.Description).toBe(tool.description);
      expect(listed.InputSchema.Type).toBe('object');
      expect(listed.InputSchema.Required).toEqual(['idempotency_key', ...(own.required ?? [])]);
      expect(Object.keys(listed.InputSchema.Properties)).toEqual(['idempotency_key', ...Object.keys(own.properties)]);
      for (const [argument, schema] of Object.entries(own.properties)) {
        expect(listed.InputSchema.Properties[argument]).toEqual({
          Type: schema.type,
          ...(schema.description ? { Description: schema.description } : {}),
        });
      }
      expect(listed.InputSchema.Properties.idempotency_key.Type).toBe('string');
    },
  );

  it.each(READS.map((read) => [read.name, read] as const))(
    'lists the read %s with its own arguments, as MCP lists them',
    (name, read) => {
      const target = ofType('AWS::BedrockAgentCore::GatewayTarget').find(
        ([, candidate]) => candidate.Properties.Name === name.replaceAll('_', '-'),
      )![1];
      const [listed] = target.Properties.TargetConfiguration.Mcp.Lambda.ToolSchema.InlinePayload;
      const own = z.toJSONSchema(read.args, { io: 'input' }) as {
        properties: Record<string, { type: string }>;
        required?: string[];
      };

      expect([listed.Name, listed.Description]).toEqual([name, read.description]);
      expect(listed.InputSchema.Required).toEqual(own.required);
      expect(Object.keys(listed.InputSchema.Properties)).toEqual(Object.keys(own.properties));
    },
  );

  it('lets the gateway’s role invoke exactly the tools’ and reads’ functions and the interceptor — nothing else', () => {
    const gatewayRole = gatewayOf().RoleArn['Fn::GetAtt'][0];
    const statements = ofType('AWS::IAM::Policy')
      .filter(([, policy]) => policy.Properties.Roles.some((role: { Ref: string }) => role.Ref === gatewayRole))
      .flatMap(([, policy]) => policy.Properties.PolicyDocument.Statement);
    const interceptor = stack.getLogicalId(
      stack.retrysafe.node.findChild('agentcore_interceptor').node.defaultChild as never,
    );

    expect(statements).toEqual([{ Action: 'lambda:InvokeFunction', Effect: 'Allow', Resource: expect.any(Array) }]);
    expect(statements[0].Resource.map((arn: { 'Fn::GetAtt': [string, string] }) => arn['Fn::GetAtt']).sort()).toEqual(
      [...[...TOOLS, ...READS].map((entry) => functionId(entry.name)), interceptor].map((id) => [id, 'Arn']).sort(),
    );
    expect(resources[gatewayRole]!.Properties.AssumeRolePolicyDocument.Statement).toEqual([
      expect.objectContaining({
        Principal: { Service: 'bedrock-agentcore.amazonaws.com' },
        Condition: expect.objectContaining({ StringEquals: { 'aws:SourceAccount': { Ref: 'AWS::AccountId' } } }),
      }),
    ]);
  });

  it('runs the package’s request interceptor on every request, with the request’s headers (the bearer token)', () => {
    const interceptorFn = stack.retrysafe.node.findChild('agentcore_interceptor');
    const interceptorId = stack.getLogicalId(interceptorFn.node.defaultChild as never);

    expect(gatewayOf().InterceptorConfigurations).toEqual([
      {
        Interceptor: { Lambda: { Arn: { 'Fn::GetAtt': [interceptorId, 'Arn'] } } },
        InterceptionPoints: ['REQUEST'],
        InputConfiguration: { PassRequestHeaders: true },
      },
    ]);
    expect(packageEntryFile('agentcore_interceptor')).toMatch(/agentcore_interceptor\.(ts|mjs)$/);
    // It verifies tokens as the MCP function does: the same issuer and audience.
    expect(resources[interceptorId]!.Properties.Environment.Variables).toMatchObject({
      JWT_ISSUER: ISSUER,
      JWT_AUDIENCE: 'client-123',
    });
  });

  it('gives the interceptor no table: its role sends nothing to DynamoDB', () => {
    const interceptorFn = stack.retrysafe.node.findChild('agentcore_interceptor') as unknown as {
      role: { node: { defaultChild: unknown } };
    };
    const roleId = stack.getLogicalId(interceptorFn.role.node.defaultChild as never);
    const actions = ofType('AWS::IAM::Policy')
      .filter(([, policy]) => policy.Properties.Roles.some((role: { Ref: string }) => role.Ref === roleId))
      .flatMap(([, policy]) => policy.Properties.PolicyDocument.Statement)
      .flatMap((statement: { Action: string | string[] }) => [statement.Action].flat());

    expect(actions.filter((action) => action.startsWith('dynamodb:'))).toEqual([]);
  });

  it('signs callers with a key of its own: only the interceptor and the targets may read it, each told where it is', () => {
    const [[keyId]] = ofType('AWS::SecretsManager::Secret') as [[string, Resources[string]]];
    const interceptorFn = stack.retrysafe.node.findChild('agentcore_interceptor') as unknown as NodejsFunctionLike;
    const targets = [...TOOLS, ...READS].map((entry) => stack.functions[entry.name] as unknown as NodejsFunctionLike);
    const roleOf = (fn: NodejsFunctionLike) => stack.getLogicalId(fn.role.node.defaultChild as never);
    const readers = ofType('AWS::IAM::Policy')
      .filter(([, policy]) =>
        policy.Properties.PolicyDocument.Statement.some(
          (statement: { Action: string | string[]; Resource: unknown }) =>
            [statement.Action].flat().includes('secretsmanager:GetSecretValue') &&
            JSON.stringify(statement.Resource) === JSON.stringify({ Ref: keyId }),
        ),
      )
      .flatMap(([, policy]) => policy.Properties.Roles.map((role: { Ref: string }) => role.Ref));

    expect(readers.sort()).toEqual([interceptorFn, ...targets].map(roleOf).sort());
    for (const fn of [interceptorFn, ...targets]) {
      const { Variables } = resources[stack.getLogicalId(fn.node.defaultChild as never)]!.Properties.Environment;
      expect(Variables[CALLER_KEY_SECRET_VAR]).toEqual({ Ref: keyId });
    }
    // Every target answers the gateway; no other function does (the MCP function, the completer…).
    const targetIds = new Set(targets.map((fn) => stack.getLogicalId(fn.node.defaultChild as never)));
    const flagged = ofType('AWS::Lambda::Function')
      .filter(([, fn]) => fn.Properties.Environment?.Variables?.[AGENTCORE_TARGET_VAR] === 'true')
      .map(([id]) => id);
    expect(new Set(flagged)).toEqual(targetIds);
  });

  it('sets no caller key and no target flag without the flag', () => {
    const { resources: without } = synthesize({ issuer: ISSUER, audience: 'client-123' });

    expect(ofType('AWS::SecretsManager::Secret', without)).toEqual([]);
    for (const [, fn] of ofType('AWS::Lambda::Function', without)) {
      expect(Object.keys(fn.Properties.Environment?.Variables ?? {})).not.toContain(AGENTCORE_TARGET_VAR);
    }
  });

  it('outputs the gateway’s MCP URL', () => {
    template.hasOutput('AgentCoreGatewayUrl', {
      Value: { 'Fn::GetAtt': [stack.getLogicalId(stack.retrysafe.agentCoreGateway!.gateway), 'GatewayUrl'] },
    });
  });

  it('leaves cdk-nag’s AwsSolutions pack nothing unacknowledged', () => {
    const { app } = synthesize();

    expect(() => app.synth()).not.toThrow();
  });

  it('refuses a gateway option it cannot deploy, naming the prop', () => {
    const problems = retrysafePropProblems({
      tools: [],
      entries: { mcp: '', complete: '', list_tools: '', openapi: '' },
      agentCoreGateway: { audienceClaim: 'azp' as 'aud', name: 'my_gateway' },
    });

    expect(problems).toEqual(
      expect.arrayContaining([
        'agentCoreGateway.audienceClaim: azp is neither aud nor client_id',
        'agentCoreGateway.name: my_gateway is not letters and digits with single hyphens, at most 100 characters',
      ]),
    );
  });

  it('refuses an argument the gateway’s tool schema cannot carry, naming the tool and the argument', () => {
    const either = defineToolModule({
      name: 'set_limit',
      description: 'Set a limit.',
      annotations: { destructiveHint: false, openWorldHint: false },
      args: z.strictObject({ limit: z.union([z.string(), z.number()]) }),
      access: {},
      async execute() {
        return { receipt: {}, replayed: false };
      },
    });

    expect(() => gatewayToolDefinitions([either])).toThrow(
      /agentCoreGateway: tools\.set_limit\.limit: has no single JSON type/,
    );
  });
});
