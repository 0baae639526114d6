import { join } from 'node:path';
import { Annotations, CfnOutput, RemovalPolicy, Stack, type StackProps } from 'aws-cdk-lib';
import type * as apigw from 'aws-cdk-lib/aws-apigatewayv2';
import type * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import type { NodejsFunction } from 'aws-cdk-lib/aws-lambda-nodejs';
import * as secretsmanager from 'aws-cdk-lib/aws-secretsmanager';
import * as sns from 'aws-cdk-lib/aws-sns';
import type { Construct } from 'constructs';
import {
  AgentUserPool,
  type CompleterTriggers,
  definedTable,
  eraseAccessOf,
  FUNCTION_DEFAULTS,
  IdempotencyTable,
  JWT_DEFAULTS,
  locationOutputs,
  type Observability,
  Retrysafe,
  type RetrysafeProps,
  retrysafePropProblems,
  type ToolNeeds,
  type TracingDepth,
} from 'retrysafe/cdk';
import type { AnyToolModule } from 'retrysafe/tools';
import { READS } from './reads';
import { TABLES, type TableId } from './tables';
import { type RegisteredTool, TOOLS } from './tools';

const PROJECT_ROOT = join(__dirname, '..');

/**
 * Modules left out of every bundle: Stripe's SDK is bundled only into the functions that move money,
 * and only when Stripe is configured (`stripeSecretArn`).
 */
export const EXTERNAL_MODULES = ['stripe'] as const;

/**
 * Who issues the tokens the API accepts: an OIDC provider you name (`issuer`, `audience`, `tenantClaim`),
 * or a Cognito user pool the stack creates (`userPool: true`), whose issuer, client and tenant claim the
 * API then trusts — never both.
 */
export type TokenIssuerProps =
  | {
      /**
       * The OIDC issuer the JWT authorizer trusts (for Cognito: `https://cognito-idp.<region>.amazonaws.com/<pool id>`).
       * @default JWT_DEFAULTS.issuer — a placeholder that lets the stack synthesize; set it to deploy
       */
      readonly issuer?: string;
      /**
       * Whom tokens must be issued to: their `aud`, or, in a token without `aud` (a Cognito access token),
       * their `client_id` — for Cognito, the app client id.
       * @default 'retrysafe'
       */
      readonly audience?: string;
      /**
       * The claim that names the tenant.
       * @default 'tenant_id'
       */
      readonly tenantClaim?: string;
      /** @default false */
      readonly userPool?: false;
    }
  | {
      /**
       * Create the Cognito user pool agents log in to (`AgentUserPool`): a resource server with the tools'
       * scope, one machine-to-machine app client (client credentials) whose id is the tenant, and outputs
       * for the token URL and the client id. The JWT authorizer and the MCP function trust that pool and
       * that client; the tenant claim is `client_id`.
       */
      readonly userPool: true;
      readonly issuer?: never;
      readonly audience?: never;
      readonly tenantClaim?: never;
    };

export type RetrysafeStackProps<T extends AnyToolModule = RegisteredTool> = RetrysafeStackOptions<T> & TokenIssuerProps;

export interface RetrysafeStackOptions<T extends AnyToolModule = RegisteredTool> extends StackProps {
  /**
   * The tools to deploy: each gets a function (`entryFile(name)`), a route and exactly its declared grants.
   * @default TOOLS (app/tools)
   */
  readonly tools?: readonly T[];
  /**
   * Where an entry point's source is.
   * @default `lambdas/<name>.ts` in the project
   */
  readonly entryFile?: (entry: string) => string;
  /**
   * How many invocations of the MCP function may run at once (its reserved concurrency), or `'none'` for
   * no reservation — where the account's concurrency limit is too low to reserve any (a reservation must
   * leave 100 unreserved, or the deploy fails).
   * @default MCP_RESERVED_CONCURRENCY (50)
   */
  readonly mcpReservedConcurrency?: number | 'none';
  /**
   * Delete the tables and their data with the stack.
   * @default false (tables are retained)
   */
  readonly destroyTablesOnRemoval?: boolean;
  /**
   * DynamoDB's deletion protection on every table (bin/app.ts: `-c deletionProtection=false` turns it off
   * for a throwaway stack).
   * @default true, unless `destroyTablesOnRemoval` (a protected table would make the stack's deletion fail)
   */
  readonly tableDeletionProtection?: boolean;
  /**
   * Refund through Stripe: the complete ARN of a Secrets Manager secret whose value is the (restricted)
   * API key. The functions that move money — those with access to the ledger — get
   * `PAYMENT_PROVIDER=stripe`, the ARN, read access to that secret alone, and Stripe's SDK in their bundle.
   * @default undefined (the DynamoDB ledger provider)
   */
  readonly stripeSecretArn?: string;
  /**
   * An existing SNS topic every alarm notifies.
   * @default undefined (alarms without an action)
   */
  readonly alarmTopicArn?: string;
  /**
   * How deep X-Ray traces the functions (`TRACING_DEPTHS`): each invocation, or also every DynamoDB, SQS
   * and HTTPS call — which costs each call and each cold start (docs/benchmark.md).
   * @default DEFAULT_TRACING_DEPTH ('invocations')
   */
  readonly tracing?: TracingDepth;
  /**
   * Put the tools behind an Amazon Bedrock AgentCore Gateway too (`Retrysafe`'s `agentCoreGateway`): the
   * same tokens, checked by `aud` — or by `client_id` with the stack's own user pool, whose access tokens
   * have no `aud`. Output `AgentCoreGatewayUrl`.
   * @default false
   */
  readonly agentCoreGateway?: boolean;
}

/**
 * The example app on AWS: its domain tables (invoices, tickets, outbox, ledger) and the `Retrysafe`
 * construct over them — the same construct an app adds to its own stack — with the registry's tools, the
 * example's reads and its erase. Optionally a Cognito user pool for agents (`userPool: true`).
 */
export class RetrysafeStack<T extends AnyToolModule = RegisteredTool> extends Stack {
  public readonly idempotencyTable: IdempotencyTable;
  public readonly tables: Readonly<Record<TableId, dynamodb.Table>>;
  /** The construct: every function, the API, the completer, erase, alarms. */
  public readonly retrysafe: Retrysafe;
  /** Every routed function, by entry: the tools', the reads', and the API's own. */
  public readonly functions: Readonly<Record<string, NodejsFunction>>;
  public readonly api: apigw.HttpApi;
  /** The completer (not routed): fed by the idempotency table's stream and its recheck queue. */
  public readonly completer: NodejsFunction;
  /** The completer's stream mapping, its recheck queue and their failure queues. */
  public readonly completerTriggers: CompleterTriggers;
  /** Tenant erase, invoked directly by operators (not routed). */
  public readonly eraser: NodejsFunction;
  /** Alarms and the dashboard. */
  public readonly observability: Observability;
  /** The Cognito user pool agents log in to, when the stack creates it (`userPool: true`). */
  public readonly agentUserPool: AgentUserPool | undefined;

  constructor(scope: Construct, id: string, props: RetrysafeStackProps<T> = {}) {
    super(scope, id, props);
    const removalPolicy = props.destroyTablesOnRemoval ? RemovalPolicy.DESTROY : RemovalPolicy.RETAIN;
    const deletionProtection = props.tableDeletionProtection ?? !props.destroyTablesOnRemoval;
    const tools = props.tools ?? (TOOLS as readonly AnyToolModule[] as readonly T[]);
    const entryFile = props.entryFile ?? ((entry: string) => join(PROJECT_ROOT, 'lambdas', `${entry}.ts`));

    // The construct id stays 'KeyStore' (its name before the class was renamed), at the stack's root: a
    // new id or path would give the table a new logical id, and CloudFormation would replace it — a new,
    // empty table, the old one (retained) orphaned with every stored receipt. The domain tables stay at
    // the root for the same reason.
    this.idempotencyTable = new IdempotencyTable(this, 'KeyStore', {
      destroyOnRemoval: props.destroyTablesOnRemoval,
      deletionProtection,
    });
    this.tables = {
      invoices: definedTable(this, 'Invoices', TABLES.invoices, { removalPolicy, deletionProtection }),
      tickets: definedTable(this, 'Tickets', TABLES.tickets, { removalPolicy, deletionProtection }),
      outbox: definedTable(this, 'Outbox', TABLES.outbox, { removalPolicy, deletionProtection }),
      ledger: definedTable(this, 'Ledger', TABLES.ledger, { removalPolicy, deletionProtection }),
    };
    // Refunds through Stripe: what the tools that may write the ledger need (it is where a payment
    // provider is called) — the provider's choice, the secret holding its API key, and its SDK.
    const stripe = props.stripeSecretArn
      ? secretsmanager.Secret.fromSecretCompleteArn(this, 'StripeKey', props.stripeSecretArn)
      : undefined;
    const paysThroughStripe: ToolNeeds | undefined = stripe && {
      environment: { PAYMENT_PROVIDER: 'stripe', STRIPE_SECRET_ARN: stripe.secretArn },
      secrets: [stripe],
      bundledModules: ['stripe'],
    };
    const construct: RetrysafeProps = {
      // The example's metrics, alarms and dashboard keep their name whatever the stack is called.
      serviceName: FUNCTION_DEFAULTS.serviceName,
      tools: tools.map((tool) => ({
        tool,
        entry: entryFile(tool.name),
        ...(paysThroughStripe && tool.access.ledger !== undefined ? { needs: paysThroughStripe } : {}),
      })),
      entries: {
        mcp: entryFile('mcp'),
        complete: entryFile('complete'),
        list_tools: entryFile('list_tools'),
        openapi: entryFile('openapi'),
        // The example's erase also empties its invoices, tickets and outbox (`includeDomain`).
        erase: entryFile('erase'),
      },
      tables: this.tables,
      reads: READS.map((read) => ({ read, entry: entryFile(read.name) })),
      eraseAccess: eraseAccessOf(TABLES),
      idempotencyTable: this.idempotencyTable,
      bundling: {
        projectRoot: PROJECT_ROOT,
        depsLockFilePath: join(PROJECT_ROOT, 'package-lock.json'),
        externalModules: EXTERNAL_MODULES,
      },
      ...(props.mcpReservedConcurrency === undefined ? {} : { mcpReservedConcurrency: props.mcpReservedConcurrency }),
      ...(props.tracing === undefined ? {} : { tracing: props.tracing }),
      ...(props.agentCoreGateway
        ? { agentCoreGateway: { audienceClaim: props.userPool ? ('client_id' as const) : ('aud' as const) } }
        : {}),
    };
    checkProps(props, construct);

    // Whoever issues the tokens, every function reads the tenant from one claim (TENANT_CLAIM) and the
    // MCP function checks the same issuer and audience as the JWT authorizer.
    this.agentUserPool = props.userPool ? new AgentUserPool(this, 'AgentUserPool', { removalPolicy }) : undefined;
    const jwt = this.agentUserPool ?? {
      issuer: props.issuer ?? JWT_DEFAULTS.issuer,
      audience: props.audience ?? JWT_DEFAULTS.audience,
      tenantClaim: props.tenantClaim ?? JWT_DEFAULTS.tenantClaim,
    };
    if (!props.issuer && !this.agentUserPool) {
      Annotations.of(this).addWarningV2(
        'retrysafe:issuer',
        `No issuer given: the JWT authorizer trusts the placeholder ${JWT_DEFAULTS.issuer} and refuses every token. Deploy with -c issuer=<your OIDC issuer>, or -c userPool=true.`,
      );
    }
    this.retrysafe = new Retrysafe(this, 'Retrysafe', {
      ...construct,
      // The stack writes the same outputs at its top (locationOutputs), under the names its docs give.
      outputs: false,
      issuer: jwt.issuer,
      audience: jwt.audience,
      tenantClaim: jwt.tenantClaim,
      ...(props.alarmTopicArn ? { alarmTopic: sns.Topic.fromTopicArn(this, 'AlarmTopic', props.alarmTopicArn) } : {}),
    });
    this.functions = this.retrysafe.functions;
    this.api = this.retrysafe.api;
    this.completer = this.retrysafe.completer;
    this.completerTriggers = this.retrysafe.completerTriggers;
    this.eraser = this.retrysafe.eraser;
    this.observability = this.retrysafe.observability;

    locationOutputs(this, this.api, { idempotency: this.idempotencyTable.table, ...this.tables });
    if (this.retrysafe.agentCoreGateway) {
      new CfnOutput(this, 'AgentCoreGatewayUrl', {
        description: 'The AgentCore Gateway’s MCP endpoint: the same bearer tokens as ApiUrl.',
        value: this.retrysafe.agentCoreGateway.gateway.attrGatewayUrl,
      });
    }
    if (this.agentUserPool) {
      const pool = this.agentUserPool;
      new CfnOutput(this, 'TokenUrl', {
        description:
          'Where agents get an access token: POST grant_type=client_credentials with the client id and secret.',
        value: pool.tokenUrl,
      });
      new CfnOutput(this, 'AgentClientId', {
        description:
          'The agents’ app client (its id is their tenant); its secret: aws cognito-idp describe-user-pool-client.',
        value: pool.agentClient.userPoolClientId,
      });
      new CfnOutput(this, 'UserPoolId', { value: pool.userPool.userPoolId });
      new CfnOutput(this, 'TokenScopes', {
        description: 'The scopes the agents’ client may ask for.',
        value: pool.scopes.join(' '),
      });
    }
  }
}

/**
 * Every prop checked up front, every problem in one error: the stack's own (what the types cannot catch
 * from context, `-c userPool=true -c issuer=…`) and the construct's.
 */
function checkProps(props: RetrysafeStackProps<AnyToolModule>, construct: RetrysafeProps): void {
  const problems: string[] = [];
  if (props.userPool) {
    const given = (['issuer', 'audience', 'tenantClaim'] as const).filter((name) => props[name] !== undefined);
    if (given.length > 0) {
      problems.push(
        `userPool: the stack's own user pool sets the issuer, audience and tenant claim; ${given.join(', ')} cannot be given with it`,
      );
    }
  }
  if (props.stripeSecretArn !== undefined && !(props.tools ?? TOOLS).some((tool) => tool.access.ledger !== undefined)) {
    problems.push('stripeSecretArn: no tool moves money (writes the ledger), so no function would use it');
  }
  problems.push(...retrysafePropProblems(construct));
  if (problems.length > 0) throw new Error(`RetrysafeStack: ${problems.join('; ')}`);
}
