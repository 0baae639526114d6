import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { Annotations, CfnOutput, Duration, RemovalPolicy, Stack, Validations } from 'aws-cdk-lib';
import { AccessLogFormat } from 'aws-cdk-lib/aws-apigateway';
import * as apigw from 'aws-cdk-lib/aws-apigatewayv2';
import { HttpNoneAuthorizer } from 'aws-cdk-lib/aws-apigatewayv2';
import { HttpJwtAuthorizer } from 'aws-cdk-lib/aws-apigatewayv2-authorizers';
import { HttpLambdaIntegration } from 'aws-cdk-lib/aws-apigatewayv2-integrations';
import type * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import { LogLevel, NodejsFunction, OutputFormat } from 'aws-cdk-lib/aws-lambda-nodejs';
import * as logs from 'aws-cdk-lib/aws-logs';
import type * as secretsmanager from 'aws-cdk-lib/aws-secretsmanager';
import type * as sns from 'aws-cdk-lib/aws-sns';
import * as ssm from 'aws-cdk-lib/aws-ssm';
import { Construct } from 'constructs';
import { RECHECK_QUEUE_URL_VAR } from '../admin/recheck-queue-url';
import type { GatewayListedRead } from '../agentcore/tool-schema';
import {
  apiEntries,
  apiRoutes,
  completerAccess,
  DEFAULT_ROUTE_ENTRY,
  entryNameProblems,
  type FunctionAccess,
  INVOCATION_TIMEOUT_SECONDS,
  type ReadRoute,
  type RouteDefinition,
  readRouteProblems,
} from '../api/routes';
import { packageManifest } from '../package-manifest';
import { tableEnvVar } from '../store/tables';
import type { AnyToolModule, TableAccess } from '../tools/tool-module';
import { AGENTCORE_TARGET_VAR, AgentCoreGateway, type AgentCoreGatewayOptions } from './agentcore-gateway';
import { CompleterTriggers } from './completer-triggers';
import {
  ACCESS_LOG_RETENTION_DAYS,
  BUNDLING,
  COMPLETER_DEFAULTS,
  DEFAULT_TRACING_DEPTH,
  ERASE_DEFAULTS,
  FUNCTION_DEFAULTS,
  JWT_DEFAULTS,
  LAMBDA_RUNTIME,
  MCP_RESERVED_CONCURRENCY,
  POWERTOOLS_LAYER,
  STAGE_THROTTLE,
  TRACING_DEPTHS,
  type TracingDepth,
  tracingEnvironment,
} from './defaults';
import { IdempotencyTable } from './idempotency-table';
import { Observability } from './observability';
import { tableOutputId } from './output-names';

/**
 * The outputs that say where the API and the tables are — `ApiUrl`, `IdempotencyTableName`,
 * `<Name>TableName` — under `scope`: what `retrysafe calls|complete|erase --outputs` reads back.
 */
export function locationOutputs(
  scope: Construct,
  api: apigw.HttpApi,
  tables: Readonly<Record<string, dynamodb.ITable>>,
): void {
  new CfnOutput(scope, 'ApiUrl', { value: api.apiEndpoint });
  for (const [name, table] of Object.entries(tables)) {
    new CfnOutput(scope, tableOutputId(name), { value: table.tableName });
  }
}

/** Why a public route has no API Gateway authorizer, for cdk-nag. */
const PUBLIC_ROUTE_REASON =
  'Public by design: it reveals nothing secret (health, the OpenAPI document, or the RFC 9728 metadata naming the issuer) and touches no store.';

/** One of the app's tools and the Lambda entry file that serves it. */
export interface RetrysafeTool<T extends AnyToolModule = AnyToolModule> {
  /** The tool module: its name (the route, the function), schema and declared `access`. */
  readonly tool: T;
  /** Its Lambda entry file, e.g. `export const handler = toolEntry(tool, services)` (`retrysafe/lambda`). */
  readonly entry: string;
  /**
   * What the tool's code needs besides its tables, given to every function that runs it — its own, the
   * MCP function and the completer (which run every tool): environment variables, read access to
   * secrets, and npm modules bundled although `bundling.externalModules` leaves them out elsewhere (an
   * SDK only this tool loads, e.g. a payment provider's). Every function that loads the app's lists of
   * tools and reads bundles its modules too (`GET /tools`, the OpenAPI document: they import them all).
   * @default none
   */
  readonly needs?: ToolNeeds;
}

/**
 * What a tool's or read's code needs besides its tables (see `RetrysafeTool.needs`, `RetrysafeRead.needs`).
 * A variable that two tools or reads set must have one value (the MCP function runs them all), and none
 * may be one the construct sets itself (`CONSTRUCT_VARIABLES`, `<NAME>_TABLE`).
 */
export interface ToolNeeds {
  /** @default {} */
  readonly environment?: Readonly<Record<string, string>>;
  /** Secrets its code reads (each granted `grantRead`). @default [] */
  readonly secrets?: readonly secretsmanager.ISecret[];
  /** Modules of `bundling.externalModules` to bundle into its functions after all. @default [] */
  readonly bundledModules?: readonly string[];
}

/** A read of the app's own (`defineReadModule`: `GET path`) and its Lambda entry file. */
export interface RetrysafeRead {
  /** The read module: its name (the route, the function), path and declared `access`. */
  readonly read: ReadRoute;
  /** Its Lambda entry file, e.g. `export const handler = readEntry(read, services)` (`retrysafe/lambda/read`). */
  readonly entry: string;
  /**
   * What the read's code needs besides its tables (a read that calls an outside API: its URL, its key's
   * secret, its SDK), given to its own function and the MCP function (which runs every read); every
   * function that loads the app's lists (the completer, `GET /tools`, the OpenAPI document) bundles its
   * modules too.
   * @default none
   */
  readonly needs?: ToolNeeds;
}

/**
 * The variables the construct sets on its functions, besides `<NAME>_TABLE` for each table (the
 * completer also gets its recheck queue's URL). A tool's or read's `needs.environment` may not set one:
 * it would change it on the MCP function and the completer alone (another tenant claim, another table).
 */
export const CONSTRUCT_VARIABLES = [
  'IDEMPOTENCY_TABLE',
  'TENANT_CLAIM',
  'TOOL_NAMES',
  'JWT_ISSUER',
  'JWT_AUDIENCE',
  'JWKS_URL',
  'POWERTOOLS_SERVICE_NAME',
  'POWERTOOLS_TRACE_ENABLED',
  RECHECK_QUEUE_URL_VAR,
] as const;

/**
 * The entries that load the app's lists of tools and reads (`mcpEntry(TOOLS, services, { reads: READS })`,
 * `completerEntry(TOOLS, …)`, `listToolsEntry(TOOLS)`, `openApiEntry(TOOLS, READS)`, and `eraseEntry(TABLES,
 * env, TOOLS)`, which reads each tool's `access` so that a table waits only for the calls that touch it), and
 * so every module those import: each bundles every module a tool or read needs, whether it runs that code or
 * only lists it.
 */
const LIST_ENTRIES: readonly string[] = ['mcp', 'complete', 'list_tools', 'openapi', 'erase'];

/**
 * What a function is given of the app's `needs`: all of what each tool or read it runs needs — its own
 * function runs one, MCP every tool and read, the completer every tool — and, where it loads the app's
 * lists (`LIST_ENTRIES`), the modules of them all.
 */
function needsOf(entry: string, tools: readonly RetrysafeTool[], reads: readonly RetrysafeRead[]): ToolNeeds[] {
  const all = [...tools, ...reads];
  const runs =
    entry === 'mcp'
      ? all
      : entry === 'complete'
        ? tools
        : all.filter((owner) => ('tool' in owner ? owner.tool.name : owner.read.name) === entry);
  const needs = runs.flatMap((owner) => (owner.needs ? [owner.needs] : []));
  if (!LIST_ENTRIES.includes(entry)) return needs;
  return [...needs, { bundledModules: all.flatMap((owner) => owner.needs?.bundledModules ?? []) }];
}

/**
 * The entry files of the functions that serve every tool, and optional replacements of the package's own
 * (`retrysafe/lambda` has a one-line factory for each).
 */
export interface RetrysafeEntries {
  /** `export const handler = mcpEntry(TOOLS, services, { reads: READS })` (`READS`: the same list as `reads`). */
  readonly mcp: string;
  /** `export const handler = completerEntry(TOOLS, services)`. */
  readonly complete: string;
  /** `export const handler = listToolsEntry(TOOLS)`. */
  readonly list_tools: string;
  /** `export const handler = openApiEntry(TOOLS, READS)`. */
  readonly openapi: string;
  /**
   * Tenant erase (`eraseEntry(scope)`), with `eraseAccess` for the domain tables it empties.
   * @default the package's: the tenant's idempotency records only
   */
  readonly erase?: string;
  /** @default the package's (`healthEntry()`) */
  readonly health?: string;
  /** @default the package's (`notFoundEntry()`) */
  readonly not_found?: string;
  /** @default the package's (`getOperationEntry()`: tool names from `TOOL_NAMES`) */
  readonly get_operation?: string;
}

export interface RetrysafeProps {
  /** The app's tools, each with its entry file: each gets a function, a route and exactly its declared grants. */
  readonly tools: readonly RetrysafeTool[];
  /** The entry files of the MCP function, the completer, `GET /tools` and `GET /openapi.json`. */
  readonly entries: RetrysafeEntries;
  /**
   * The app's tables, by the names the tools' `access` uses (`{ contacts: contactsTable }`). Every
   * function gets `<NAME>_TABLE` for each; each function is granted only the actions its access names.
   * @default {} (tools that touch no table of their own)
   */
  readonly tables?: Readonly<Record<string, dynamodb.ITable>>;
  /**
   * Reads of the app's own, besides `get_operation`: each gets a function, a JWT route and its access.
   * @default [] (none)
   */
  readonly reads?: readonly RetrysafeRead[];
  /**
   * The OIDC issuer the JWT authorizer trusts, and the MCP function verifies tokens against
   * (`<issuer>/.well-known/jwks.json`).
   * @default JWT_DEFAULTS.issuer — a placeholder that lets the app synthesize (with a warning); set it to deploy
   */
  readonly issuer?: string;
  /**
   * Where the MCP function fetches the issuer's signing keys, when they are not at
   * `<issuer>/.well-known/jwks.json` (Okta: `<issuer>/v1/keys`; Keycloak:
   * `<issuer>/protocol/openid-connect/certs`; Entra ID: the `jwks_uri` of its discovery document).
   * @default undefined (`<issuer>/.well-known/jwks.json`, Cognito's)
   */
  readonly jwksUrl?: string;
  /**
   * The service name every function logs and counts its metrics under (`POWERTOOLS_SERVICE_NAME`, the
   * metrics' `service` dimension, the alarms' and the dashboard's names): two deployments in one account
   * need two names.
   * @default the stack's name
   */
  readonly serviceName?: string;
  /**
   * Whom tokens must be issued to: their `aud`, or, in a token without `aud` (a Cognito access token),
   * their `client_id`.
   * @default 'retrysafe'
   */
  readonly audience?: string;
  /**
   * The token claim that names the tenant (the user is always `sub`).
   * @default 'tenant_id'
   */
  readonly tenantClaim?: string;
  /**
   * An SNS topic every alarm notifies.
   * @default undefined (alarms without an action)
   */
  readonly alarmTopic?: sns.ITopic;
  /**
   * The idempotency table, when the stack already has one (its logical id must not change: a new id is a
   * new, empty table).
   * @default a new `IdempotencyTable`, retained when the stack is deleted
   */
  readonly idempotencyTable?: IdempotencyTable;
  /**
   * The DynamoDB actions tenant erase may send to the app's tables (`includeDomain`), by table name.
   * @default {} (erase reaches the idempotency table only)
   */
  readonly eraseAccess?: TableAccess;
  /**
   * Stack outputs for the API's URL (`ApiUrl`) and every table's name (`IdempotencyTableName`,
   * `<Name>TableName`), which `retrysafe calls|complete|erase --aws --outputs FILE` reads back from
   * `cdk deploy --outputs-file FILE`.
   * @default true
   */
  readonly outputs?: boolean;
  /**
   * How many invocations of the MCP function may run at once (its reserved concurrency), or `'none'`.
   * @default MCP_RESERVED_CONCURRENCY (50)
   */
  readonly mcpReservedConcurrency?: number | 'none';
  /**
   * How deep X-Ray traces the functions: each invocation, or also every DynamoDB, SQS and HTTPS call.
   * @default DEFAULT_TRACING_DEPTH ('invocations')
   */
  readonly tracing?: TracingDepth;
  /**
   * Where the functions' code is bundled from (`NodejsFunction`'s `projectRoot` and `depsLockFilePath`),
   * and npm modules left out of every bundle besides the AWS SDK's (`externalModules`: an SDK the app
   * loads only where it is configured; a tool's `needs.bundledModules` brings it back into its functions).
   * @default NodejsFunction's own root and lock file; no module left out but BUNDLING's
   */
  readonly bundling?: {
    readonly projectRoot?: string;
    readonly depsLockFilePath?: string;
    readonly externalModules?: readonly string[];
  };
  /**
   * Put the app's tools and reads behind an Amazon Bedrock AgentCore Gateway as well (MCP for agents on
   * AgentCore): the gateway checks the same tokens as the HTTP API (CUSTOM_JWT over `issuer`'s discovery
   * document and `audience`), lists each tool and read with its own schema as a Lambda target on its own
   * function, and a
   * REQUEST interceptor (the package's `agentcore_interceptor` function) writes each call's caller from
   * the token; the gateway's role may invoke exactly those functions. Output `AgentCoreGatewayUrl`.
   * @default undefined (no gateway)
   */
  readonly agentCoreGateway?: AgentCoreGatewayOptions;
}

/** The package's own entry files, by entry: built (`dist/lambdas/*.mjs`) or, in this repository, the sources. */
const PACKAGE_ENTRY_FILES = {
  health: 'health',
  not_found: 'not_found',
  get_operation: 'get_operation',
  erase: 'erase_records',
  agentcore_interceptor: 'agentcore_interceptor',
} as const;

/** Where the package's own entry file `name` is: beside the built construct, or in the sources (lib/lambda/entries). */
export function packageEntryFile(name: keyof typeof PACKAGE_ENTRY_FILES): string {
  const file = PACKAGE_ENTRY_FILES[name];
  const candidates = [
    join(__dirname, 'lambdas', `${file}.mjs`),
    join(__dirname, '..', 'lambdas', `${file}.mjs`),
    join(__dirname, '..', 'lambda', 'entries', `${file}.ts`),
  ];
  const found = candidates.find((candidate) => existsSync(candidate));
  if (!found) throw new Error(`retrysafe: the package's entry ${file} is missing (looked in ${candidates.join(', ')})`);
  return found;
}

/**
 * retrysafe for an app's own tools, in its own stack: the idempotency table, one function per tool with
 * exactly its grants, the reads, the MCP function, the completer (fed by the table's stream and a
 * recheck queue), tenant erase, the HTTP API with its JWT authorizer and throttles, alarms and a
 * dashboard. Routes and grants are derived from the tools (`lib/api/routes.ts`).
 *
 * ```ts
 * new Retrysafe(this, 'Tools', {
 *   tools: [{ tool: upsertContact, entry: 'src/lambdas/upsert_contact.ts' }],
 *   entries: { mcp: 'src/lambdas/mcp.ts', complete: 'src/lambdas/complete.ts', list_tools: …, openapi: … },
 *   tables: { contacts },
 *   issuer, audience,
 * });
 * ```
 */
export class Retrysafe extends Construct {
  public readonly idempotencyTable: IdempotencyTable;
  /** Every routed function, by entry name: each tool, each read, and the API's own. */
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
  /** The AgentCore Gateway in front of the tools, with `agentCoreGateway`. */
  public readonly agentCoreGateway: AgentCoreGateway | undefined;
  readonly #powertoolsLayer: lambda.ILayerVersion;
  readonly #tables: Readonly<Record<string, dynamodb.ITable>>;
  readonly #bundling: RetrysafeProps['bundling'];

  constructor(scope: Construct, id: string, props: RetrysafeProps) {
    super(scope, id);
    checkProps(props);
    const tools = props.tools.map((entry) => entry.tool);
    const reads = props.reads ?? [];
    this.#tables = props.tables ?? {};
    this.#bundling = props.bundling;
    const serviceName = props.serviceName ?? Stack.of(this).stackName;
    const jwt = {
      issuer: props.issuer ?? JWT_DEFAULTS.issuer,
      audience: props.audience ?? JWT_DEFAULTS.audience,
      tenantClaim: props.tenantClaim ?? JWT_DEFAULTS.tenantClaim,
    };
    this.idempotencyTable = props.idempotencyTable ?? new IdempotencyTable(this, 'IdempotencyTable');
    const environment: Record<string, string> = {
      IDEMPOTENCY_TABLE: this.idempotencyTable.table.tableName,
      ...Object.fromEntries(Object.entries(this.#tables).map(([name, table]) => [tableEnvVar(name), table.tableName])),
      TENANT_CLAIM: jwt.tenantClaim,
      TOOL_NAMES: tools.map((tool) => tool.name).join(','),
      JWT_ISSUER: jwt.issuer,
      JWT_AUDIENCE: jwt.audience,
      POWERTOOLS_SERVICE_NAME: serviceName,
      ...(props.jwksUrl ? { JWKS_URL: props.jwksUrl } : {}),
      ...tracingEnvironment(props.tracing ?? DEFAULT_TRACING_DEPTH),
      // No NODE_OPTIONS=--enable-source-maps: it reads the source map at init and slows every stack trace.
      // The map ships beside each bundle; an operator can turn it on per function.
    };

    this.#powertoolsLayer = lambda.LayerVersion.fromLayerVersionArn(
      this,
      'PowertoolsLayer',
      ssm.StringParameter.valueForStringParameter(this, POWERTOOLS_LAYER.ssmParameter(POWERTOOLS_LAYER.version)),
    );
    const files: Record<string, string> = {
      health: props.entries.health ?? packageEntryFile('health'),
      not_found: props.entries.not_found ?? packageEntryFile('not_found'),
      get_operation: props.entries.get_operation ?? packageEntryFile('get_operation'),
      list_tools: props.entries.list_tools,
      mcp: props.entries.mcp,
      openapi: props.entries.openapi,
      ...Object.fromEntries(reads.map((read) => [read.read.name, read.entry])),
      ...Object.fromEntries(props.tools.map((entry) => [entry.tool.name, entry.entry])),
    };

    const functions: Record<string, NodejsFunction> = {};
    const readRoutes = reads.map((read) => read.read);
    // With `agentCoreGateway`, each tool's and read's function is also the gateway's Lambda target.
    const gatewayTargets = new Set(props.agentCoreGateway ? [...tools, ...readRoutes].map(({ name }) => name) : []);
    for (const [entry, access] of Object.entries(apiEntries(tools, readRoutes)) as Array<[string, FunctionAccess]>) {
      const fn = this.#function(entry, files[entry]!, environment, {
        needs: needsOf(entry, props.tools, reads),
        reservedConcurrency: entry === 'mcp' ? (props.mcpReservedConcurrency ?? MCP_RESERVED_CONCURRENCY) : undefined,
        gatewayTarget: gatewayTargets.has(entry),
      });
      this.#grant(fn, access);
      functions[entry] = fn;
    }
    this.functions = functions;

    // The completer finishes the calls whose worker died. Not routed: nobody can call it over the API.
    // Its triggers — the idempotency table's stream, its recheck queue — and their grants come with
    // CompleterTriggers; it runs as many at a time as its batches need (no checkpoint to share).
    this.completer = this.#function('complete', props.entries.complete, environment, {
      timeoutSeconds: COMPLETER_DEFAULTS.timeoutSeconds,
      needs: needsOf('complete', props.tools, reads),
      wildcardReason:
        "The stream's event source mapping needs dynamodb:ListStreams, which has no resource-level permissions either.",
    });
    this.#grant(this.completer, completerAccess(tools));
    this.completerTriggers = new CompleterTriggers(this, 'CompleterTriggers', {
      completer: this.completer,
      table: this.idempotencyTable.table,
    });
    // Tenant erase: invoked directly by an operator (no route, no schedule).
    this.eraser = this.#function('erase', props.entries.erase ?? packageEntryFile('erase'), environment, {
      timeoutSeconds: ERASE_DEFAULTS.timeoutSeconds,
    });
    this.#grant(this.eraser, { idempotencyTable: 'erase', tables: props.eraseAccess ?? {} });

    this.observability = new Observability(this, 'Observability', {
      toolNames: tools.map((tool) => tool.name),
      functions: { ...functions, complete: this.completer, erase: this.eraser },
      completer: this.completer,
      completerQueues: this.completerTriggers,
      tables: { idempotency: this.idempotencyTable.table, ...this.#tables },
      serviceName,
      ...(props.alarmTopic ? { alarmTopic: props.alarmTopic } : {}),
    });

    if (!props.issuer) {
      Annotations.of(this).addWarningV2(
        'retrysafe:issuer',
        `No issuer given: the JWT authorizer trusts the placeholder ${JWT_DEFAULTS.issuer} and refuses every token. Set the issuer of your OIDC provider to deploy.`,
      );
    }
    this.api = this.#api(functions, apiRoutes(tools, readRoutes), jwt);
    if (props.outputs ?? true) {
      locationOutputs(this, this.api, { idempotency: this.idempotencyTable.table, ...this.#tables });
    }
    this.agentCoreGateway =
      props.agentCoreGateway &&
      this.#agentCoreGateway(props.agentCoreGateway, tools, readRoutes, jwt, {
        environment,
        serviceName,
        outputs: props.outputs ?? true,
      });
  }

  /**
   * The AgentCore Gateway: its interceptor (a function of its own, no table), and the gateway over the
   * tools' own functions.
   */
  #agentCoreGateway(
    options: AgentCoreGatewayOptions,
    tools: readonly AnyToolModule[],
    reads: readonly ReadRoute[],
    jwt: { issuer: string; audience: string },
    {
      environment,
      serviceName,
      outputs,
    }: { environment: Record<string, string>; serviceName: string; outputs: boolean },
  ): AgentCoreGateway {
    const interceptor = this.#function('agentcore_interceptor', packageEntryFile('agentcore_interceptor'), environment);
    const gateway = new AgentCoreGateway(this, 'AgentCoreGateway', {
      ...options,
      tools: tools.map((tool) => ({ tool, fn: this.functions[tool.name]! })),
      // A read's module (`defineReadModule`) carries its description and arguments besides its route.
      reads: reads.map((read) => ({ read: read as GatewayListedRead, fn: this.functions[read.name]! })),
      interceptor,
      issuer: jwt.issuer,
      audience: jwt.audience,
      serviceName,
    });
    if (outputs) new CfnOutput(this, 'AgentCoreGatewayUrl', { value: gateway.gateway.attrGatewayUrl });
    return gateway;
  }

  /** Exactly the DynamoDB access an entry point's code needs, through the tables' grant methods. */
  #grant(fn: NodejsFunction, access: FunctionAccess): void {
    if (access.idempotencyTable === 'claims') this.idempotencyTable.grantClaims(fn);
    if (access.idempotencyTable === 'read') this.idempotencyTable.grantRead(fn);
    if (access.idempotencyTable === 'erase') this.idempotencyTable.grantErase(fn);
    for (const [table, actions] of Object.entries(access.tables ?? {}) as Array<[string, string[]]>) {
      this.#tables[table]!.grant(fn, ...actions);
    }
  }

  /** One entry point: its own role and log group, Node.js 24 on arm64, a minified bundle without the SDK. */
  #function(
    name: string,
    entry: string,
    environment: Record<string, string>,
    overrides: {
      timeoutSeconds?: number;
      /** What the tools and reads it runs (or loads) need (`needsOf`). */
      needs?: readonly ToolNeeds[];
      /** Why the role needs another action on `*` besides X-Ray's, for cdk-nag. */
      wildcardReason?: string;
      /** Its reserved concurrency; `'none'` or undefined reserves none. */
      reservedConcurrency?: number | 'none' | undefined;
      /**
       * An AgentCore Gateway's Lambda target: `RETRYSAFE_AGENTCORE_TARGET` set, and folded into its bundle
       * as "true" (every other bundle folds it as "false" and drops the gateway's code).
       */
      gatewayTarget?: boolean;
    } = {},
  ): NodejsFunction {
    const needs = overrides.needs ?? [];
    const bundled = new Set(needs.flatMap((need) => need.bundledModules ?? []));
    const external = [...BUNDLING.externalModules, ...(this.#bundling?.externalModules ?? [])];
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
      ...(this.#bundling?.projectRoot ? { projectRoot: this.#bundling.projectRoot } : {}),
      ...(this.#bundling?.depsLockFilePath ? { depsLockFilePath: this.#bundling.depsLockFilePath } : {}),
      runtime: LAMBDA_RUNTIME,
      architecture: lambda.Architecture.ARM_64,
      memorySize: FUNCTION_DEFAULTS.memorySize,
      timeout: Duration.seconds(overrides.timeoutSeconds ?? INVOCATION_TIMEOUT_SECONDS),
      ...(typeof overrides.reservedConcurrency === 'number'
        ? { reservedConcurrentExecutions: overrides.reservedConcurrency }
        : {}),
      role,
      logGroup,
      environment: Object.assign(
        {},
        environment,
        ...needs.map((need) => need.environment ?? {}),
        overrides.gatewayTarget ? { [AGENTCORE_TARGET_VAR]: 'true' } : {},
      ),
      // X-Ray traces each invocation; with `tracing: 'calls'` the Powertools Tracer (from the layer) adds
      // the DynamoDB, SQS and HTTPS calls.
      tracing: lambda.Tracing.ACTIVE,
      layers: [this.#powertoolsLayer],
      bundling: {
        ...BUNDLING,
        define: {
          ...BUNDLING.define,
          ...(overrides.gatewayTarget ? { [`process.env.${AGENTCORE_TARGET_VAR}`]: '"true"' } : {}),
        },
        externalModules: external.filter((module) => !bundled.has(module)),
        // The map maps stack traces (mappings and file names); the sources themselves are not shipped.
        sourceMap: true,
        sourcesContent: false,
        format: OutputFormat.CJS,
        // esbuild's warnings and errors, not its list of every file it wrote (its CLI's default, `info`):
        // a synth, `npm test` included, prints what needs reading.
        logLevel: LogLevel.WARNING,
      },
    });
    Validations.of(fn).acknowledge({
      id: 'AwsSolutions-L1',
      reason:
        'nodejs24.x, the current Node.js LTS runtime Lambda offers, is the deploy target (cdk-nag may not know it yet).',
    });
    for (const secret of new Set(needs.flatMap((need) => need.secrets ?? []))) secret.grantRead(fn);
    return fn;
  }

  /** The HTTP API: the routes, the JWT authorizer on every route but the public ones, throttling, access logs. */
  #api(
    functions: Record<string, NodejsFunction>,
    routes: readonly RouteDefinition[],
    jwt: { issuer: string; audience: string },
  ): apigw.HttpApi {
    const notFound = functions[DEFAULT_ROUTE_ENTRY]!;
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
    // Every route has a bucket at the gateway: its own where it names one (`throttle`, lib/api/throttle.ts),
    // else the stage's default. (RouteSettings is JSON to CloudFormation: its keys are written as
    // CloudFormation spells them.)
    const routeSettings: Record<string, { ThrottlingRateLimit: number; ThrottlingBurstLimit: number }> = {};
    for (const route of routes) {
      const integration =
        integrations.get(route.entry) ??
        new HttpLambdaIntegration(`${route.entry}Integration`, functions[route.entry]!);
      integrations.set(route.entry, integration);
      const [created] = api.addRoutes({
        path: route.path,
        methods: [apigw.HttpMethod[route.method]],
        integration,
        ...(route.auth === 'gateway' ? {} : { authorizer: new HttpNoneAuthorizer() }),
      });
      if (route.auth === 'public' && created) {
        Validations.of(created).acknowledge({ id: 'AwsSolutions-APIG4', reason: PUBLIC_ROUTE_REASON });
      }
      if (route.throttle && created) {
        routeSettings[`${route.method} ${route.path}`] = {
          ThrottlingRateLimit: route.throttle.rateLimit,
          ThrottlingBurstLimit: route.throttle.burstLimit,
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
 * Every problem of `props`, each naming the prop: what the types cannot catch (names, tables, files on
 * disk, numbers) or what JavaScript lets through. The construct reports them all in one error.
 */
export function retrysafePropProblems(props: RetrysafeProps): string[] {
  const problems: string[] = [];
  const tables = props.tables ?? {};
  const tools = props.tools ?? [];
  const reads = props.reads ?? [];
  if (tools.length === 0) problems.push('tools: at least one tool');
  problems.push(
    ...entryNameProblems([...tools.map((entry) => entry.tool?.name), ...reads.map((read) => read.read?.name)]),
    ...readRouteProblems(reads.map((read) => read.read).filter(Boolean)),
  );
  const accessOf = [
    ...tools.map((entry) => [`tools.${entry.tool?.name}.access`, entry.tool?.access ?? {}] as const),
    ...reads.map((read) => [`reads.${read.read?.name}.access`, read.read?.access ?? {}] as const),
    ['eraseAccess', props.eraseAccess ?? {}] as const,
  ];
  for (const [where, access] of accessOf) {
    for (const table of Object.keys(access)) {
      if (!Object.hasOwn(tables, table))
        problems.push(`${where}: names the table ${table}, which tables does not have`);
    }
  }
  const files: Array<[string, string | undefined]> = [
    ...tools.map((entry) => [`tools.${entry.tool?.name}.entry`, entry.entry] as [string, string | undefined]),
    ...reads.map((read) => [`reads.${read.read?.name}.entry`, read.entry] as [string, string | undefined]),
    ...(['mcp', 'complete', 'list_tools', 'openapi'] as const).map(
      (name) => [`entries.${name}`, props.entries?.[name]] as [string, string | undefined],
    ),
    ...(['erase', 'health', 'not_found', 'get_operation'] as const)
      .filter((name) => props.entries?.[name] !== undefined)
      .map((name) => [`entries.${name}`, props.entries?.[name]] as [string, string | undefined]),
  ];
  for (const [where, file] of files) {
    if (!file) problems.push(`${where}: an entry file is required`);
    else if (!existsSync(file)) problems.push(`${where}: ${file} does not exist`);
  }
  const reserved = props.mcpReservedConcurrency;
  if (reserved !== undefined && reserved !== 'none' && !(Number.isInteger(reserved) && reserved >= 1)) {
    problems.push(`mcpReservedConcurrency: ${String(reserved)} is neither a whole number from 1 up nor 'none'`);
  }
  if (props.tracing !== undefined && !TRACING_DEPTHS.includes(props.tracing)) {
    problems.push(`tracing: ${String(props.tracing)} is not one of ${TRACING_DEPTHS.join(', ')}`);
  }
  const gateway = props.agentCoreGateway;
  if (gateway?.audienceClaim !== undefined && !['aud', 'client_id'].includes(gateway.audienceClaim)) {
    problems.push(`agentCoreGateway.audienceClaim: ${String(gateway.audienceClaim)} is neither aud nor client_id`);
  }
  if (gateway?.name !== undefined && !/^([0-9a-zA-Z]-?){1,100}$/.test(gateway.name)) {
    problems.push(
      `agentCoreGateway.name: ${gateway.name} is not letters and digits with single hyphens, at most 100 characters`,
    );
  }
  problems.push(...bundlingProblems(props), ...needsProblems(props));
  return problems;
}

/**
 * Every problem of the tools' and reads' `needs`: a variable the construct sets itself, a variable two of
 * them set to different values (the MCP function runs them all: one would read the other's value), a
 * module to bundle that no bundle leaves out.
 */
function needsProblems(props: RetrysafeProps): string[] {
  const problems: string[] = [];
  const own = new Set<string>([...CONSTRUCT_VARIABLES, ...Object.keys(props.tables ?? {}).map(tableEnvVar)]);
  const external = new Set([...BUNDLING.externalModules, ...(props.bundling?.externalModules ?? [])]);
  const setBy = new Map<string, { readonly where: string; readonly value: string }>();
  const owners = [
    ...(props.tools ?? []).map((entry) => [`tools.${entry.tool?.name}`, entry.needs] as const),
    ...(props.reads ?? []).map((entry) => [`reads.${entry.read?.name}`, entry.needs] as const),
  ];
  for (const [where, needs] of owners) {
    for (const [name, value] of Object.entries(needs?.environment ?? {})) {
      if (own.has(name)) problems.push(`${where}.needs.environment: ${name} is set by the construct itself`);
      const first = setBy.get(name);
      if (!first) setBy.set(name, { where, value });
      else if (first.value !== value) {
        problems.push(
          `${where}.needs.environment: ${name} is also ${first.where}'s, with another value (the MCP function runs both)`,
        );
      }
    }
    for (const module of needs?.bundledModules ?? []) {
      if (!external.has(module)) {
        problems.push(`${where}.needs.bundledModules: ${module} is bundled anyway (not in bundling.externalModules)`);
      }
    }
  }
  return problems;
}

/**
 * The packages retrysafe's own code loads in the functions that the Lambda runtime does not provide: its
 * dependencies and required peers (zod), but for those `BUNDLING` leaves to the runtime (the AWS SDK, the
 * Powertools layer's Tracer). Read from its own package.json, from the sources or from dist/.
 */
function ownBundledPackages(): string[] {
  const manifest = packageManifest();
  const peers = Object.keys(manifest.peerDependencies).filter(
    (name) => !manifest.peerDependenciesMeta?.[name]?.optional,
  );
  return [...Object.keys(manifest.dependencies), ...peers].filter(
    (name) => !BUNDLING.externalModules.some((pattern) => leavesOut(pattern, name)),
  );
}

/**
 * Whether esbuild's `external` entry `pattern` (a name, a subpath, or a `*` wildcard) leaves out the
 * package `name` or a part of it: `zod/mini` leaves out what `zod` is loaded for, `@aws-sdk/*` every SDK
 * client.
 */
function leavesOut(pattern: string, name: string): boolean {
  const matcher = new RegExp(
    `^${pattern
      .split('*')
      .map((part) => part.replace(/[.+?^${}()|[\]\\]/g, '\\$&'))
      .join('.*')}$`,
  );
  return matcher.test(name) || pattern.startsWith(`${name}/`);
}

/**
 * Every problem of `bundling.externalModules`: an entry that leaves out a package retrysafe's own code
 * loads (its functions would `require` it at init, where the runtime has none, and fail).
 */
function bundlingProblems(props: RetrysafeProps): string[] {
  const externals = props.bundling?.externalModules ?? [];
  if (externals.length === 0) return [];
  const own = ownBundledPackages();
  return externals.flatMap((pattern) => {
    const left = own.filter((name) => leavesOut(pattern, name));
    return left.length === 0
      ? []
      : [
          `bundling.externalModules: ${pattern} would leave retrysafe's own ${left.join(', ')} out of the bundles (its code loads them in the functions, and the Lambda runtime has none: they would fail at init)`,
        ];
  });
}

/** Every prop checked up front, every problem in one error. */
function checkProps(props: RetrysafeProps): void {
  const problems = retrysafePropProblems(props);
  if (problems.length > 0) throw new Error(`Retrysafe: ${problems.join('; ')}`);
}
