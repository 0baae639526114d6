import { Stack, Validations } from 'aws-cdk-lib';
import * as agentcore from 'aws-cdk-lib/aws-bedrockagentcore';
import * as iam from 'aws-cdk-lib/aws-iam';
import type * as lambda from 'aws-cdk-lib/aws-lambda';
import * as secretsmanager from 'aws-cdk-lib/aws-secretsmanager';
import { Construct } from 'constructs';
import { CALLER_KEY_SECRET_VAR } from '../agentcore/caller-key';
import { type GatewayListedRead, type GatewayToolDefinition, gatewayToolDefinitions } from '../agentcore/tool-schema';
import type { AnyToolModule } from '../tools/tool-module';
import { AGENTCORE_GATEWAY_DEFAULTS } from './defaults';

/** How `Retrysafe` puts the app's tools behind an AgentCore Gateway (`RetrysafeProps.agentCoreGateway`). */
export interface AgentCoreGatewayOptions {
  /**
   * Which claim of a token names whom it was issued to, checked against `audience`: `aud` (an OIDC
   * provider's tokens, the gateway's `allowedAudience`), or `client_id` (a Cognito access token, which has
   * no `aud`: the gateway's `allowedClients`). API Gateway's JWT authorizer reads either; the gateway
   * checks the one named here.
   * @default 'aud'
   */
  readonly audienceClaim?: 'aud' | 'client_id';
  /**
   * The gateway's name (letters, digits and single hyphens, at most 100), unique in the account and region.
   * @default the service name, its other characters made hyphens
   */
  readonly name?: string;
}

/**
 * Set on a function that is an AgentCore Gateway's Lambda target (and folded into its bundle): its entry
 * (`toolEntry`, `readEntry`) then answers the gateway's invocations too.
 */
export const AGENTCORE_TARGET_VAR = 'RETRYSAFE_AGENTCORE_TARGET';

export interface AgentCoreGatewayProps extends AgentCoreGatewayOptions {
  /** Each tool with the function that runs it: one Lambda target each. */
  readonly tools: ReadonlyArray<{ readonly tool: AnyToolModule; readonly fn: lambda.Function }>;
  /** Each of the app's own reads with its function: one Lambda target each. @default [] */
  readonly reads?: ReadonlyArray<{ readonly read: GatewayListedRead; readonly fn: lambda.Function }>;
  /** The REQUEST interceptor (lib/lambda/entries/agentcore_interceptor.ts). */
  readonly interceptor: lambda.Function;
  /** The OIDC issuer the API's JWT authorizer trusts. */
  readonly issuer: string;
  /** The audience the API's JWT authorizer checks. */
  readonly audience: string;
  /** Used for the default name. */
  readonly serviceName: string;
}

/** A gateway's or target's name: letters and digits, single hyphens between them, at most 100 characters. */
export function gatewayResourceName(name: string): string {
  return name
    .replace(/[^0-9A-Za-z]+/g, '-')
    .replace(/^-+|-+$/g, '')
    .slice(0, 100)
    .replace(/-+$/, '');
}

/**
 * An Amazon Bedrock AgentCore Gateway in front of the app's tools and reads: MCP for agents on AgentCore,
 * the same tokens as the HTTP API (CUSTOM_JWT: the issuer's discovery document, the same audience), one
 * Lambda target per tool or read function with its own schema, a REQUEST interceptor that writes the caller from
 * the token into each call, and a role that may invoke exactly those functions.
 *
 * One target per tool, not one per app: each tool already has its own function with exactly its grants,
 * and the target is that function — one function for every tool behind the gateway would need every
 * tool's grants (the MCP function is that, for MCP over the HTTP API).
 *
 * The caller reaches a target in its arguments, where the agent can write too: the interceptor signs it
 * with a key of this construct's (a generated secret), and only the interceptor and the targets may read
 * that key — a target runs no call whose caller it cannot verify (lib/agentcore/caller.ts).
 */
export class AgentCoreGateway extends Construct {
  public readonly gateway: agentcore.CfnGateway;
  /** The gateway's role: invokes the tools' functions and the interceptor, nothing else. */
  public readonly role: iam.Role;
  /** The Lambda targets, by tool or read name. */
  public readonly targets: Readonly<Record<string, agentcore.CfnGatewayTarget>>;
  /** The tools as the gateway lists them. */
  public readonly toolDefinitions: readonly GatewayToolDefinition[];
  /** The key the interceptor signs each call's caller with and the targets check it with. */
  public readonly callerKey: secretsmanager.Secret;

  constructor(scope: Construct, id: string, props: AgentCoreGatewayProps) {
    super(scope, id);
    const stack = Stack.of(this);
    const reads = props.reads ?? [];
    this.toolDefinitions = gatewayToolDefinitions(
      props.tools.map(({ tool }) => tool),
      reads.map(({ read }) => read),
    );
    // Listed in the order of `toolDefinitions`: the tools, then the reads.
    const listed = [
      ...props.tools.map(({ tool, fn }) => ({ name: tool.name, kind: 'tool', fn })),
      ...reads.map(({ read, fn }) => ({ name: read.name, kind: 'read', fn })),
    ];
    this.role = new iam.Role(this, 'Role', {
      description: 'retrysafe AgentCore Gateway: invokes the tools it lists and its request interceptor, nothing else',
      assumedBy: new iam.ServicePrincipal(AGENTCORE_GATEWAY_DEFAULTS.servicePrincipal, {
        conditions: {
          StringEquals: { 'aws:SourceAccount': stack.account },
          ArnLike: {
            'aws:SourceArn': `arn:${stack.partition}:bedrock-agentcore:${stack.region}:${stack.account}:gateway/*`,
          },
        },
      }),
    });
    // Written out rather than `grantInvoke`: that grant adds every version and alias (`<arn>:*`), and the
    // gateway invokes the unqualified ARNs its targets and interceptor name — these functions, nothing more.
    this.role.addToPolicy(
      new iam.PolicyStatement({
        actions: ['lambda:InvokeFunction'],
        resources: [...listed.map(({ fn }) => fn.functionArn), props.interceptor.functionArn],
      }),
    );

    this.callerKey = new secretsmanager.Secret(this, 'CallerKey', {
      description: 'retrysafe AgentCore Gateway: signs the caller its interceptor hands each tool (HMAC-SHA256)',
      generateSecretString: { ...AGENTCORE_GATEWAY_DEFAULTS.callerKey },
    });
    Validations.of(this.callerKey).acknowledge({
      id: 'AwsSolutions-SMG4',
      reason:
        'Read once per process by the interceptor and the targets: a rotation would refuse the calls signed across it ' +
        'until every process read the new key. Rotate by replacing the secret (a deploy).',
    });
    for (const fn of [props.interceptor, ...listed.map((target) => target.fn)]) {
      this.callerKey.grantRead(fn);
      fn.addEnvironment(CALLER_KEY_SECRET_VAR, this.callerKey.secretArn);
    }

    const authorizer =
      (props.audienceClaim ?? 'aud') === 'aud'
        ? { allowedAudience: [props.audience] }
        : { allowedClients: [props.audience] };
    this.gateway = new agentcore.CfnGateway(this, 'Gateway', {
      name: gatewayResourceName(props.name ?? props.serviceName),
      description: 'retrysafe: idempotent agent tools over MCP',
      protocolType: AGENTCORE_GATEWAY_DEFAULTS.protocolType,
      roleArn: this.role.roleArn,
      authorizerType: AGENTCORE_GATEWAY_DEFAULTS.authorizerType,
      authorizerConfiguration: {
        customJwtAuthorizer: {
          discoveryUrl: `${props.issuer.replace(/\/$/, '')}${AGENTCORE_GATEWAY_DEFAULTS.discoveryPath}`,
          ...authorizer,
        },
      },
      interceptorConfigurations: [
        {
          interceptor: { lambda: { arn: props.interceptor.functionArn } },
          interceptionPoints: [...AGENTCORE_GATEWAY_DEFAULTS.interceptionPoints],
          inputConfiguration: { passRequestHeaders: AGENTCORE_GATEWAY_DEFAULTS.passRequestHeaders },
        },
      ],
    });
    // The gateway calls its interceptor from its first request on: its role may do so before it exists.
    this.gateway.node.addDependency(this.role);

    const targets: Record<string, agentcore.CfnGatewayTarget> = {};
    listed.forEach(({ name, kind, fn }, index) => {
      const definition = this.toolDefinitions[index]!;
      const target = new agentcore.CfnGatewayTarget(this, `${name}Target`, {
        gatewayIdentifier: this.gateway.attrGatewayIdentifier,
        name: gatewayResourceName(name),
        description: `retrysafe ${kind} ${name}`,
        credentialProviderConfigurations: [
          { credentialProviderType: AGENTCORE_GATEWAY_DEFAULTS.credentialProviderType },
        ],
        targetConfiguration: {
          mcp: {
            lambda: {
              lambdaArn: fn.functionArn,
              toolSchema: { inlinePayload: [definition as agentcore.CfnGatewayTarget.ToolDefinitionProperty] },
            },
          },
        },
      });
      target.node.addDependency(this.role);
      targets[name] = target;
    });
    this.targets = targets;
  }
}
