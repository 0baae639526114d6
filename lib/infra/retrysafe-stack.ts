import { join } from 'node:path';
import { Annotations, CfnOutput, Duration, RemovalPolicy, Stack, type StackProps, Validations } from 'aws-cdk-lib';
import { AccessLogFormat } from 'aws-cdk-lib/aws-apigateway';
import * as apigw from 'aws-cdk-lib/aws-apigatewayv2';
import { HttpNoneAuthorizer } from 'aws-cdk-lib/aws-apigatewayv2';
import { HttpJwtAuthorizer } from 'aws-cdk-lib/aws-apigatewayv2-authorizers';
import { HttpLambdaIntegration } from 'aws-cdk-lib/aws-apigatewayv2-integrations';
import type * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import { NodejsFunction, OutputFormat } from 'aws-cdk-lib/aws-lambda-nodejs';
import * as logs from 'aws-cdk-lib/aws-logs';
import * as secretsmanager from 'aws-cdk-lib/aws-secretsmanager';
import * as ssm from 'aws-cdk-lib/aws-ssm';
import type { Construct } from 'constructs';
import {
  completerAccess,
  DEFAULT_ROUTE_ENTRY,
  type EntryName,
  ERASE_ACCESS,
  entriesFor,
  type FunctionAccess,
  INVOCATION_TIMEOUT_SECONDS,
  routesFor,
} from '../api/routes';
import { type DomainTableId, TABLES } from '../store/tables';
import { type RegisteredTool, TOOLS } from '../tools/registry';
import type { AnyToolModule } from '../tools/tool-module';
import { AgentUserPool } from './agent-user-pool';
import { CompleterTriggers } from './completer-triggers';
import {
  ACCESS_LOG_RETENTION_DAYS,
  BUNDLING,
  COMPLETER_DEFAULTS,
  DEFAULT_TRACING_DEPTH,
  ERASE_DEFAULTS,
  FUNCTION_DEFAULTS,
  JWT_DEFAULTS,
  MCP_RESERVED_CONCURRENCY,
  POWERTOOLS_LAYER,
  STAGE_THROTTLE,
  TRACING_DEPTHS,
  type TracingDepth,
  tracingEnvironment,
  UNAUTHORIZED_ROUTE_THROTTLE,
} from './defaults';
import { IdempotencyTable } from './idempotency-table';
import { Observability } from './observability';
import { tableFromDefinition } from './table';

const PROJECT_ROOT = join(__dirname, '..', '..');

/** Why a route has no API Gateway authorizer, for cdk-nag. */
const UNAUTHORIZED_ROUTE_REASONS = {
  public:
    'Public by design: it reveals nothing secret (health, or the RFC 9728 metadata naming the issuer) and touches no store.',
  function:
    "The function verifies the JWT itself (RS256 against the issuer's JWKS, issuer, audience, exp), so that its 401 can carry the RFC 9728 resource_metadata challenge MCP clients need; API Gateway's authorizer cannot.",
} as const;

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
   * @default TOOLS (the registry)
   */
  readonly tools?: readonly T[];
  /**
   * Where an entry point's source is.
   * @default `lambdas/<name>.ts` in the project
   */
  readonly entryFile?: (entry: EntryName<T>) => string;
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
   * and HTTPS call — which costs each call and each cold start (README, Benchmark).
   * @default DEFAULT_TRACING_DEPTH ('invocations')
   */
  readonly tracing?: TracingDepth;
}

/**
 * retrysafe on AWS: one Lambda per tool and per read behind an HTTP API with a JWT authorizer, the
 * idempotency table and the domain tables in DynamoDB. Routes and each function's grants are derived
 * from the tool registry (`lib/tools/registry.ts`, `lib/api/routes.ts`); tables from
 * `lib/store/tables.ts`.
 */
export class RetrysafeStack<T extends AnyToolModule = RegisteredTool> extends Stack {
  public readonly idempotencyTable: IdempotencyTable;
  public readonly tables: Readonly<Record<DomainTableId, dynamodb.Table>>;
  public readonly functions: Readonly<Record<EntryName<T>, NodejsFunction>>;
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
  readonly #stripeKey: secretsmanager.ISecret | undefined;
  readonly #powertoolsLayer: lambda.ILayerVersion;

  constructor(scope: Construct, id: string, props: RetrysafeStackProps<T> = {}) {
    super(scope, id, props);
    checkProps(props);
    const removalPolicy = props.destroyTablesOnRemoval ? RemovalPolicy.DESTROY : RemovalPolicy.RETAIN;
    // Whoever issues the tokens, every function reads the tenant from one claim (TENANT_CLAIM) and the
    // MCP function checks the same issuer and audience as the JWT authorizer.
    this.agentUserPool = props.userPool ? new AgentUserPool(this, 'AgentUserPool', { removalPolicy }) : undefined;
    const jwt = this.agentUserPool ?? {
      issuer: props.issuer ?? JWT_DEFAULTS.issuer,
      audience: props.audience ?? JWT_DEFAULTS.audience,
      tenantClaim: props.tenantClaim ?? JWT_DEFAULTS.tenantClaim,
    };
    const tools = props.tools ?? (TOOLS as readonly AnyToolModule[] as readonly T[]);
    const entryFile = props.entryFile ?? ((entry: string) => join(PROJECT_ROOT, 'lambdas', `${entry}.ts`));

    // The construct id stays 'KeyStore' (its name before the class was renamed): a new id would give the
    // table a new logical id, and CloudFormation would replace it — a new, empty table, the old one
    // (retained) orphaned with every stored receipt.
    this.idempotencyTable = new IdempotencyTable(this, 'KeyStore', {
      destroyOnRemoval: props.destroyTablesOnRemoval,
    });
    this.tables = {
      invoices: tableFromDefinition(this, 'Invoices', TABLES.invoices, { removalPolicy }),
      tickets: tableFromDefinition(this, 'Tickets', TABLES.tickets, { removalPolicy }),
      outbox: tableFromDefinition(this, 'Outbox', TABLES.outbox, { removalPolicy }),
      ledger: tableFromDefinition(this, 'Ledger', TABLES.ledger, { removalPolicy }),
    };
    const environment: Record<string, string> = {
      [TABLES.idempotency.envVar]: this.idempotencyTable.table.tableName,
      ...Object.fromEntries(
        (Object.keys(this.tables) as Array<keyof typeof this.tables>).map((table) => [
          TABLES[table].envVar,
          this.tables[table].tableName,
        ]),
      ),
      TENANT_CLAIM: jwt.tenantClaim,
      TOOL_NAMES: tools.map((tool) => tool.name).join(','),
      JWT_ISSUER: jwt.issuer,
      JWT_AUDIENCE: jwt.audience,
      POWERTOOLS_SERVICE_NAME: FUNCTION_DEFAULTS.serviceName,
      ...tracingEnvironment(props.tracing ?? DEFAULT_TRACING_DEPTH),
      // No NODE_OPTIONS=--enable-source-maps: it reads the source map at init and slows every stack trace
      // (README, Benchmark). The map ships beside each bundle; an operator can turn it on per function.
    };

    this.#powertoolsLayer = lambda.LayerVersion.fromLayerVersionArn(
      this,
      'PowertoolsLayer',
      ssm.StringParameter.valueForStringParameter(this, POWERTOOLS_LAYER.ssmParameter(POWERTOOLS_LAYER.version)),
    );
    const stripeKey = props.stripeSecretArn
      ? secretsmanager.Secret.fromSecretCompleteArn(this, 'StripeKey', props.stripeSecretArn)
      : undefined;
    this.#stripeKey = stripeKey;
    const functions = {} as Record<EntryName<T>, NodejsFunction>;
    for (const [entry, access] of Object.entries(entriesFor(tools)) as Array<[EntryName<T>, FunctionAccess]>) {
      const fn = this.#function(entry, entryFile(entry), environment, {
        movesMoney: movesMoney(access),
        reservedConcurrency: entry === 'mcp' ? (props.mcpReservedConcurrency ?? MCP_RESERVED_CONCURRENCY) : undefined,
      });
      this.#grant(fn, access);
      functions[entry] = fn;
    }
    this.functions = functions;

    // The completer finishes the calls whose worker died. Not routed: nobody can call it over the API.
    // Its triggers — the idempotency table's stream, its recheck queue — and their grants come with
    // CompleterTriggers; it runs as many at a time as its batches need (no checkpoint to share).
    this.completer = this.#function('complete', entryFile('complete' as EntryName<T>), environment, {
      timeoutSeconds: COMPLETER_DEFAULTS.timeoutSeconds,
      movesMoney: movesMoney(completerAccess(tools)),
      wildcardReason:
        "The stream's event source mapping needs dynamodb:ListStreams, which has no resource-level permissions either.",
    });
    this.#grant(this.completer, completerAccess(tools));
    this.completerTriggers = new CompleterTriggers(this, 'CompleterTriggers', {
      completer: this.completer,
      table: this.idempotencyTable.table,
    });
    // Tenant erase: invoked directly by an operator (no route, no schedule), on the same library function
    // as `npm run erase`.
    this.eraser = this.#function('erase', entryFile('erase' as EntryName<T>), environment, {
      timeoutSeconds: ERASE_DEFAULTS.timeoutSeconds,
    });
    this.#grant(this.eraser, ERASE_ACCESS);

    this.observability = new Observability(this, 'Observability', {
      toolNames: tools.map((tool) => tool.name),
      functions: { ...functions, complete: this.completer, erase: this.eraser },
      completer: this.completer,
      completerQueues: this.completerTriggers,
      tables: { idempotency: this.idempotencyTable.table, ...this.tables },
      serviceName: FUNCTION_DEFAULTS.serviceName,
      ...(props.alarmTopicArn ? { alarmTopicArn: props.alarmTopicArn } : {}),
    });

    if (!props.issuer && !this.agentUserPool) {
      Annotations.of(this).addWarningV2(
        'retrysafe:issuer',
        `No issuer given: the JWT authorizer trusts the placeholder ${JWT_DEFAULTS.issuer} and refuses every token. Deploy with -c issuer=<your OIDC issuer>, or -c userPool=true.`,
      );
    }
    this.api = this.#api(functions, routesFor(tools), {
      issuer: jwt.issuer,
      audience: jwt.audience,
    });

    new CfnOutput(this, 'ApiUrl', { value: this.api.apiEndpoint });
    new CfnOutput(this, 'IdempotencyTableName', { value: this.idempotencyTable.table.tableName });
    for (const [table, resource] of Object.entries(this.tables)) {
      new CfnOutput(this, `${table[0]!.toUpperCase()}${table.slice(1)}TableName`, { value: resource.tableName });
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

  /** Exactly the DynamoDB access an entry point's code needs, through the tables' grant methods. */
  #grant(fn: NodejsFunction, access: FunctionAccess): void {
    if (access.idempotencyTable === 'claims') this.idempotencyTable.grantClaims(fn);
    if (access.idempotencyTable === 'read') this.idempotencyTable.grantRead(fn);
    if (access.idempotencyTable === 'erase') this.idempotencyTable.grantErase(fn);
    for (const [table, actions] of Object.entries(access.tables ?? {}) as Array<[DomainTableId, string[]]>) {
      this.tables[table].grant(fn, ...actions);
    }
  }

  /** One entry point: its own role and log group, Node.js 24 on arm64, a minified bundle without the SDK. */
  #function(
    name: string,
    entry: string,
    environment: Record<string, string>,
    overrides: {
      timeoutSeconds?: number;
      movesMoney?: boolean;
      /** Why the role needs another action on `*` besides X-Ray's, for cdk-nag. */
      wildcardReason?: string;
      /** Its reserved concurrency; `'none'` or undefined reserves none. */
      reservedConcurrency?: number | 'none';
    } = {},
  ): NodejsFunction {
    const stripe = overrides.movesMoney ? this.#stripeKey : undefined;
    const logGroup = new logs.LogGroup(this, `${name}Logs`, {
      retention: FUNCTION_DEFAULTS.logRetentionDays as logs.RetentionDays,
      removalPolicy: RemovalPolicy.DESTROY,
    });
    const role = new iam.Role(this, `${name}Role`, {
      assumedBy: new iam.ServicePrincipal('lambda.amazonaws.com'),
      description: `retrysafe ${name}: its log group and its tables, nothing else`,
    });
    logGroup.grantWrite(role);
    Validations.of(role).acknowledge({
      id: 'AwsSolutions-IAM5[Resource::*]',
      reason: [
        'Active tracing: xray:PutTraceSegments and xray:PutTelemetryRecords have no resource-level permissions.',
        overrides.wildcardReason,
        'Every other action names its resource.',
      ]
        .filter(Boolean)
        .join(' '),
    });
    const fn = new NodejsFunction(this, name, {
      entry,
      handler: 'handler',
      projectRoot: PROJECT_ROOT,
      depsLockFilePath: join(PROJECT_ROOT, 'package-lock.json'),
      runtime: lambda.Runtime.NODEJS_24_X,
      architecture: lambda.Architecture.ARM_64,
      memorySize: FUNCTION_DEFAULTS.memorySize,
      timeout: Duration.seconds(overrides.timeoutSeconds ?? INVOCATION_TIMEOUT_SECONDS),
      ...(typeof overrides.reservedConcurrency === 'number'
        ? { reservedConcurrentExecutions: overrides.reservedConcurrency }
        : {}),
      role,
      logGroup,
      environment: stripe
        ? { ...environment, PAYMENT_PROVIDER: 'stripe', STRIPE_SECRET_ARN: stripe.secretArn }
        : environment,
      // X-Ray traces each invocation; with `tracing: 'calls'` the Powertools Tracer (from the layer) adds
      // the DynamoDB, SQS and HTTPS calls.
      tracing: lambda.Tracing.ACTIVE,
      layers: [this.#powertoolsLayer],
      bundling: {
        ...BUNDLING,
        externalModules: BUNDLING.externalModules.filter((module) => !(stripe && module === 'stripe')),
        // The map maps stack traces (mappings and file names); the sources themselves are not shipped.
        sourceMap: true,
        sourcesContent: false,
        format: OutputFormat.CJS,
      },
    });
    Validations.of(fn).acknowledge({
      id: 'AwsSolutions-L1',
      reason:
        'nodejs24.x, the current Node.js LTS runtime Lambda offers, is the deploy target (cdk-nag may not know it yet).',
    });
    stripe?.grantRead(fn);
    return fn;
  }

  /** The HTTP API: the shared routes, the JWT authorizer on every route but /health, throttling, access logs. */
  #api(
    functions: Record<EntryName<T>, NodejsFunction>,
    routes: ReturnType<typeof routesFor<T>>,
    jwt: { issuer: string; audience: string },
  ): apigw.HttpApi {
    const notFound = functions[DEFAULT_ROUTE_ENTRY];
    const authorizer = new HttpJwtAuthorizer('Jwt', jwt.issuer, {
      jwtAudience: [jwt.audience],
      identitySource: ['$request.header.Authorization'],
    });
    // Every route needs a token by default, $default (unknown routes and tools) included; the public
    // routes opt out one by one.
    const api = new apigw.HttpApi(this, 'Api', {
      description: 'retrysafe: idempotent agent tools',
      createDefaultStage: false,
      defaultAuthorizer: authorizer,
      defaultIntegration: new HttpLambdaIntegration('NotFound', notFound),
    });
    const accessLogs = new logs.LogGroup(this, 'ApiAccessLogs', {
      retention: ACCESS_LOG_RETENTION_DAYS as logs.RetentionDays,
      removalPolicy: RemovalPolicy.DESTROY,
    });
    const stage = new apigw.HttpStage(this, 'Stage', {
      httpApi: api,
      stageName: '$default',
      autoDeploy: true,
      throttle: STAGE_THROTTLE,
      accessLogSettings: {
        destination: new apigw.LogGroupLogDestination(accessLogs),
        // Request metadata only: no bodies, no headers, no tokens.
        format: AccessLogFormat.custom(
          JSON.stringify({
            requestId: '$context.requestId',
            time: '$context.requestTime',
            ip: '$context.identity.sourceIp',
            method: '$context.httpMethod',
            route: '$context.routeKey',
            status: '$context.status',
            latency: '$context.responseLatency',
            responseLength: '$context.responseLength',
            authorizerError: '$context.authorizer.error',
            integrationError: '$context.integrationErrorMessage',
          }),
        ),
      },
    });
    const integrations = new Map<string, HttpLambdaIntegration>();
    // The routes without an authorizer get their own, smaller buckets (UNAUTHORIZED_ROUTE_THROTTLE): a
    // tokenless flood is refused there, and the routes behind the authorizer keep the rest of the stage.
    // (RouteSettings is JSON to CloudFormation: its keys are written as CloudFormation spells them.)
    const routeSettings: Record<string, { ThrottlingRateLimit: number; ThrottlingBurstLimit: number }> = {};
    for (const route of routes) {
      const integration =
        integrations.get(route.entry) ?? new HttpLambdaIntegration(`${route.entry}Integration`, functions[route.entry]);
      integrations.set(route.entry, integration);
      const [created] = api.addRoutes({
        path: route.path,
        methods: [apigw.HttpMethod[route.method]],
        integration,
        ...(route.auth === 'gateway' ? {} : { authorizer: new HttpNoneAuthorizer() }),
      });
      if (route.auth !== 'gateway' && created) {
        Validations.of(created).acknowledge({
          id: 'AwsSolutions-APIG4',
          reason: UNAUTHORIZED_ROUTE_REASONS[route.auth],
        });
        const throttle = UNAUTHORIZED_ROUTE_THROTTLE[route.auth];
        routeSettings[`${route.method} ${route.path}`] = {
          ThrottlingRateLimit: throttle.rateLimit,
          ThrottlingBurstLimit: throttle.burstLimit,
        };
        // A stage's route settings must name routes that exist: CloudFormation creates the routes first.
        stage.node.addDependency(created);
      }
    }
    (stage.node.defaultChild as apigw.CfnStage).routeSettings = routeSettings;
    return api;
  }
}

/**
 * Every prop checked up front, every problem in one error: the ones the types cannot catch from
 * context (`-c userPool=true -c issuer=…`) or from JavaScript.
 */
function checkProps(props: RetrysafeStackProps<AnyToolModule>): void {
  const problems: string[] = [];
  if (props.userPool) {
    const given = (['issuer', 'audience', 'tenantClaim'] as const).filter((name) => props[name] !== undefined);
    if (given.length > 0) {
      problems.push(
        `userPool: the stack's own user pool sets the issuer, audience and tenant claim; ${given.join(', ')} cannot be given with it`,
      );
    }
  }
  const reserved = props.mcpReservedConcurrency;
  if (reserved !== undefined && reserved !== 'none' && !(Number.isInteger(reserved) && reserved >= 1)) {
    problems.push(`mcpReservedConcurrency: ${String(reserved)} is neither a whole number from 1 up nor 'none'`);
  }
  if (props.tracing !== undefined && !TRACING_DEPTHS.includes(props.tracing)) {
    problems.push(`tracing: ${String(props.tracing)} is not one of ${TRACING_DEPTHS.join(', ')}`);
  }
  if (problems.length > 0) throw new Error(`RetrysafeStack: ${problems.join('; ')}`);
}

/** A function moves money when it may write the ledger: it is where a payment provider is called. */
function movesMoney(access: FunctionAccess): boolean {
  return access.tables?.ledger !== undefined;
}
