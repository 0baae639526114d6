/**
 * Defaults of the stack, as data (the constructs that use them live apart; the runtime is CDK's own
 * constant, so this module loads `aws-cdk-lib`'s Lambda module: infrastructure and bench code import it,
 * never a function's bundle). Each value is what a deployment gets unless a prop or context says otherwise.
 */
import { Runtime } from 'aws-cdk-lib/aws-lambda';
import { RERUN_LOCK_MS, STREAM_BATCHING_WINDOW_SECONDS } from '../idempotency/backoff';

/**
 * The Lambda runtime every function runs on. Whatever stands for a deployed function outside AWS runs
 * on the same Node.js major (read from its `name`, `nodejs24.x`).
 */
export const LAMBDA_RUNTIME = Runtime.NODEJS_24_X;

export const FUNCTION_DEFAULTS = {
  memorySize: 512,
  /** How long each function's logs are kept. */
  logRetentionDays: 30,
  serviceName: 'retrysafe',
} as const;

/**
 * How deep X-Ray traces the functions, a deploy choice (`-c tracing=calls`; every function gets active
 * tracing and the Powertools layer either way):
 *  - `invocations`: Lambda records each invocation (init, invocation, overhead) from outside the
 *    function; nothing is loaded or run in it.
 *  - `calls`: besides, a subsegment for every DynamoDB and SQS call and every HTTPS call (the payment
 *    provider's), by the Powertools Tracer and the X-Ray SDK from the layer. The X-Ray SDK turns on a
 *    process-wide async hook: every call of the function pays for it, and so does its cold start
 *    (docs/benchmark.md has the figures `npm run bench` measures).
 * It is Powertools' own switch, `POWERTOOLS_TRACE_ENABLED`, that the stack sets (`tracingEnvironment`);
 * an operator can flip it on one deployed function. `lambdas/shared/process.ts` loads the Tracer only
 * when it is on.
 */
export const TRACING_DEPTHS = ['invocations', 'calls'] as const;
export type TracingDepth = (typeof TRACING_DEPTHS)[number];
/** @default 'invocations' */
export const DEFAULT_TRACING_DEPTH: TracingDepth = 'invocations';

/** The environment a tracing depth gives every function. */
export function tracingEnvironment(depth: TracingDepth): Readonly<Record<string, string>> {
  return { POWERTOOLS_TRACE_ENABLED: depth === 'calls' ? 'true' : 'false' };
}

/**
 * How every entry point is bundled (the stack's NodejsFunction and the bundle-size test use the same):
 * minified CommonJS for Node.js 24 (the deployed runtime), the AWS SDK left to the Lambda runtime.
 */
export const BUNDLING = {
  minify: true,
  /** The deployed runtime's Node.js major: `nodejs24.x` → `node24`. */
  target: LAMBDA_RUNTIME.name.replace(/^nodejs(\d+)\.x$/, 'node$1'),
  // The SDK and its error classification are the Lambda runtime's (it ships the SDK with its @smithy
  // dependencies): not bundled.
  // The Powertools Tracer (and the X-Ray SDK under it) comes from the Powertools layer (`POWERTOOLS_LAYER`).
  externalModules: ['@aws-sdk/*', '@smithy/service-error-classification', '@aws-lambda-powertools/tracer'],
  // An app's entry imports the installed package's ES modules, whose shared chunks call
  // `createRequire(import.meta.url)`; bundled as CommonJS, `import.meta` would be empty and every function
  // would fail at init. `import.meta.url` becomes the bundle's own file URL.
  //
  // `process.env.RETRYSAFE_AGENTCORE_TARGET` is folded in as "false": a function is an AgentCore Gateway's
  // target only where the construct makes it one (`agentCoreGateway`, which defines it "true" on the
  // targets' bundles and sets the variable); elsewhere the gateway's code is dropped from the bundle.
  define: {
    'import.meta.url': '__retrysafe_import_meta_url',
    'process.env.RETRYSAFE_AGENTCORE_TARGET': '"false"',
  },
  banner: 'const __retrysafe_import_meta_url = require("url").pathToFileURL(__filename).href;',
} as const;

/**
 * The esbuild options NodejsFunction derives from {@link BUNDLING} (CommonJS for Node on Lambda): what
 * bundles an entry exactly as the stack does outside CDK (the bundle-size tests, the bench, the package
 * review). Plain data: nothing here loads esbuild.
 */
export function stackEsbuildOptions(externalModules: readonly string[] = []) {
  return {
    bundle: true,
    platform: 'node' as const,
    format: 'cjs' as const,
    target: BUNDLING.target,
    minify: BUNDLING.minify as boolean,
    external: [...BUNDLING.externalModules, ...externalModules],
    define: { ...BUNDLING.define },
    banner: { js: BUNDLING.banner },
  };
}

/**
 * The completer and its two triggers (`CompleterTriggers`): the idempotency table's stream and the
 * recheck queue.
 */
export const COMPLETER_DEFAULTS = {
  /**
   * How long one invocation (a stream batch, or a batch of rechecks) may take: a re-run's lock, which the
   * schedule's last re-run allows for (`RERUN_LOCK_MS`), so this is that number.
   */
  timeoutSeconds: RERUN_LOCK_MS / 1000,
  /**
   * How long the stream mapping gathers changes before it invokes the completer. A call that starts and
   * completes within the window is folded away in the batch: it costs the completer nothing — no
   * recheck, no read. Longer saves invocations; it also delays finishing an abandoned call by as much.
   */
  // A queued call's answers wait this long: one number for both.
  streamBatchingWindowSeconds: STREAM_BATCHING_WINDOW_SECONDS,
  /** Stream records per invocation, at most. */
  streamBatchSize: 100,
  /**
   * Retries of a failed stream batch (bisected on each failure, so one bad record is isolated) before its
   * metadata goes to the stream-failures queue and the mapping moves on.
   */
  streamRetryAttempts: 10,
  /** Rechecks per invocation: each may re-run a call, so few, run side by side. */
  recheckBatchSize: 5,
  /** The recheck queue's visibility timeout, as a multiple of `timeoutSeconds` (AWS advises at least 6). */
  recheckVisibilityTimeoutFactor: 6,
  /** Deliveries of a recheck before it goes to the recheck DLQ. */
  recheckMaxReceiveCount: 5,
  /** How long the failure queues keep a message (SQS's longest). */
  failedRetentionDays: 14,
} as const;

/** Tenant erase: one invocation scans the idempotency table; a timed-out run is resumed by running it again. */
export const ERASE_DEFAULTS = { timeoutSeconds: 300 } as const;

/** Alarm thresholds. */
export const ALARM_DEFAULTS = {
  /** A tool's share of `unavailable` answers over three 5-minute periods that pages someone. */
  unavailablePercent: 5,
} as const;

/** API Gateway's buckets, by route: plain data the local server reads too (`lib/api/throttle.ts`). */
export { LIGHT_ROUTE_THROTTLE, MCP_ROUTE_THROTTLE, STAGE_THROTTLE } from '../api/throttle';

/**
 * The MCP function's reserved concurrency: the most invocations it runs at once, so a flood of `/mcp`
 * requests cannot take the account's concurrency from the other functions or run up more than this many
 * executions at a time. Only authorized requests reach it on `POST /mcp` (the JWT authorizer answers the
 * rest): at that route's 30 requests/s (`MCP_ROUTE_THROTTLE`) and calls of a second or less it needs ~30;
 * 50 leaves room for slower providers. Reserving it needs an account whose concurrency
 * limit leaves 100 unreserved after it (new accounts may have a limit of 10: deploy with
 * `-c mcpReservedConcurrency=none` there). Over the cap Lambda refuses the invocation and API Gateway
 * answers 5xx, not 429.
 * @default 50
 */
export const MCP_RESERVED_CONCURRENCY = 50;

/**
 * The Cognito user pool the stack creates with `-c userPool=true` (`AgentUserPool`): agents log in with
 * the OAuth client-credentials grant at the pool's token endpoint.
 */
export const USER_POOL_DEFAULTS = {
  /** The resource server's identifier: scopes are named `<identifier>/<scope>`. */
  resourceServerId: 'retrysafe',
  /** The resource server's scopes, granted to the agents' client. */
  scopes: [{ name: 'tools', description: "Call retrysafe's tools and read their results" }],
  /**
   * The claim that names the tenant: Cognito writes the app client's id into `client_id` (and `sub`) of a
   * client-credentials access token; the client cannot choose it. One app client is one tenant.
   */
  tenantClaim: 'client_id',
  /** How long an access token lives: an agent runtime asks for a new one when it expires. */
  accessTokenValidityMinutes: 60,
  /** The hosted domain's prefix, before a suffix unique to the stack (`<prefix>-<8 hex digits>`). */
  domainPrefix: 'retrysafe',
} as const;

/** How long API access logs are kept. */
export const ACCESS_LOG_RETENTION_DAYS = 90;

/** JWT authorizer settings when neither props nor context give them (synth only: set them to deploy). */
export const JWT_DEFAULTS = {
  issuer: 'https://issuer.example.invalid',
  audience: 'retrysafe',
  tenantClaim: 'tenant_id',
} as const;

/**
 * The Powertools for AWS Lambda (TypeScript) layer every function gets: it provides the Tracer and the
 * X-Ray SDK (~127 KB minified, left out of every bundle). Its ARN is read at deploy time from the public
 * SSM parameter Powertools publishes per version — the version of the tracer in package.json.
 */
export const POWERTOOLS_LAYER = {
  version: '2.35.0',
  ssmParameter: (version: string) => `/aws/service/powertools/typescript/generic/all/${version}`,
} as const;

/**
 * The AgentCore Gateway the construct makes with `agentCoreGateway` (lib/infra/agentcore-gateway.ts):
 * MCP, tokens checked by the gateway's CUSTOM_JWT authorizer, a REQUEST interceptor that sees the
 * request's headers (the bearer token it reads the caller from), and Lambda targets the gateway invokes
 * with its own role (`GATEWAY_IAM_ROLE`).
 */
export const AGENTCORE_GATEWAY_DEFAULTS = {
  protocolType: 'MCP',
  authorizerType: 'CUSTOM_JWT',
  interceptionPoints: ['REQUEST'],
  passRequestHeaders: true,
  credentialProviderType: 'GATEWAY_IAM_ROLE',
  /** Who assumes the gateway's role. */
  servicePrincipal: 'bedrock-agentcore.amazonaws.com',
  /** The OIDC discovery document the CUSTOM_JWT authorizer reads, under the issuer. */
  discoveryPath: '/.well-known/openid-configuration',
  /** The caller-signing key the construct generates: 64 letters and digits (~380 bits). */
  callerKey: { passwordLength: 64, excludePunctuation: true },
} as const;
