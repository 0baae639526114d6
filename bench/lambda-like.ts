/**
 * What a function sees on AWS Lambda, as far as the code, Powertools and the X-Ray SDK read it: the
 * environment Lambda sets, a fresh trace header per invocation, a context with a deadline, and the
 * API Gateway event (HTTP API, payload 2.0, behind the JWT authorizer).
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { BatchWriteItemCommand, type DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { marshall } from '@aws-sdk/util-dynamodb';
import type { APIGatewayProxyEventV2WithJWTAuthorizer, Context } from 'aws-lambda';
import { TABLES, tableName } from '../app/tables';
import { tableEnvVar } from '../lib/store/tables';

export interface LambdaLikeOptions {
  readonly functionName: string;
  /** The stack's Lambda runtime (`LAMBDA_RUNTIME.name`, `nodejs24.x`); the process runs on its Node major. */
  readonly runtime: string;
  /** The folder holding the bundle (`LAMBDA_TASK_ROOT`). */
  readonly taskRoot: string;
  /** Where the bundle's external packages resolve (on Lambda: the runtime's SDK and the layers). */
  readonly nodePath: string;
  /** The fake X-Ray daemon's UDP port on 127.0.0.1. */
  readonly xrayDaemonPort: number;
  /** The environment the stack gives every function (tables, NODE_OPTIONS, tracing, …). */
  readonly functionEnvironment: Readonly<Record<string, string>>;
  /** Anything else (DynamoDB Local's endpoint and credentials). */
  readonly extra?: Readonly<Record<string, string>>;
}

/** The environment of a Lambda function on `options.runtime`, 512 MB. */
export function lambdaEnvironment(options: LambdaLikeOptions): NodeJS.ProcessEnv {
  const daemon = `127.0.0.1:${options.xrayDaemonPort}`;
  return {
    PATH: process.env.PATH,
    LANG: 'en_US.UTF-8',
    TZ: ':UTC',
    NODE_PATH: options.nodePath,
    LAMBDA_TASK_ROOT: options.taskRoot,
    LAMBDA_RUNTIME_DIR: options.taskRoot,
    _HANDLER: 'index.handler',
    AWS_EXECUTION_ENV: `AWS_Lambda_${options.runtime}`,
    AWS_LAMBDA_FUNCTION_NAME: options.functionName,
    AWS_LAMBDA_FUNCTION_VERSION: '$LATEST',
    AWS_LAMBDA_FUNCTION_MEMORY_SIZE: '512',
    AWS_LAMBDA_LOG_GROUP_NAME: `/aws/lambda/${options.functionName}`,
    AWS_LAMBDA_LOG_STREAM_NAME: '2026/12/03/[$LATEST]0123456789abcdef',
    AWS_REGION: 'us-east-1',
    AWS_DEFAULT_REGION: 'us-east-1',
    AWS_XRAY_DAEMON_ADDRESS: daemon,
    _AWS_XRAY_DAEMON_ADDRESS: '127.0.0.1',
    _AWS_XRAY_DAEMON_PORT: String(options.xrayDaemonPort),
    AWS_XRAY_CONTEXT_MISSING: 'LOG_ERROR',
    _X_AMZN_TRACE_ID: traceHeader(),
    AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true',
    ...options.functionEnvironment,
    ...options.extra,
  };
}

/** A sampled trace header as Lambda's active tracing sets it for one invocation. */
export function traceHeader(): string {
  const epoch = Math.floor(Date.now() / 1000).toString(16);
  return `Root=1-${epoch}-${randomBytes(12).toString('hex')};Parent=${randomBytes(8).toString('hex')};Sampled=1`;
}

/** One invocation's context: a deadline `timeoutMs` from now. */
export function lambdaContext(functionName: string, timeoutMs: number): Context {
  const end = Date.now() + timeoutMs;
  return {
    callbackWaitsForEmptyEventLoop: true,
    functionName,
    functionVersion: '$LATEST',
    invokedFunctionArn: `arn:aws:lambda:us-east-1:123456789012:function:${functionName}`,
    memoryLimitInMB: '512',
    awsRequestId: randomUUID(),
    logGroupName: `/aws/lambda/${functionName}`,
    logStreamName: '2026/12/03/[$LATEST]0123456789abcdef',
    getRemainingTimeInMillis: () => end - Date.now(),
    done: () => undefined,
    fail: () => undefined,
    succeed: () => undefined,
  };
}

/** An HTTP API event for `POST path` with a JSON body, the authorizer's claims and extra headers. */
export function apiEvent(
  path: string,
  body: unknown,
  claims: Readonly<Record<string, string>>,
  headers: Readonly<Record<string, string>> = {},
): APIGatewayProxyEventV2WithJWTAuthorizer {
  const domainName = 'abc123.execute-api.us-east-1.amazonaws.com';
  return {
    version: '2.0',
    routeKey: `POST ${path}`,
    rawPath: path,
    rawQueryString: '',
    headers: { 'content-type': 'application/json', host: domainName, 'x-forwarded-proto': 'https', ...headers },
    requestContext: {
      accountId: '123456789012',
      apiId: 'abc123',
      domainName,
      domainPrefix: 'abc123',
      http: { method: 'POST', path, protocol: 'HTTP/1.1', sourceIp: '192.0.2.1', userAgent: 'bench' },
      requestId: randomUUID(),
      routeKey: `POST ${path}`,
      stage: '$default',
      time: new Date().toUTCString(),
      timeEpoch: Date.now(),
      authorizer: { principalId: '', integrationLatency: 0, jwt: { claims: { ...claims }, scopes: [] } },
    },
    body: JSON.stringify(body),
    isBase64Encoded: false,
  };
}

/**
 * Seeds the invoices the bench's refunds use: `<label>-<round>` for each handler label and round, of
 * `amount` each, under `tenant`, in batches of 25 (BatchWriteItem's limit).
 */
export async function seedBenchInvoices(
  client: DynamoDBClient,
  seed: {
    readonly tenant: string;
    readonly labels: readonly string[];
    readonly rounds: number;
    readonly amount: number;
  },
): Promise<void> {
  const items = seed.labels.flatMap((label) =>
    Array.from({ length: seed.rounds }, (_, round) => ({
      tenant: seed.tenant,
      invoice_id: `${label}-${round}`,
      customer: 'c',
      amount: seed.amount,
      currency: 'usd',
      created_at: new Date().toISOString(),
    })),
  );
  for (let start = 0; start < items.length; start += 25) {
    await client.send(
      new BatchWriteItemCommand({
        RequestItems: {
          [tableName('invoices')]: items
            .slice(start, start + 25)
            .map((item) => ({ PutRequest: { Item: marshall(item) } })),
        },
      }),
    );
  }
}

/**
 * The table names every function gets, as the construct sets them (`IDEMPOTENCY_TABLE`, `<NAME>_TABLE`):
 * here the example's tables under their local names, on DynamoDB Local.
 */
export function deployedTableNames(): Readonly<Record<string, string>> {
  return {
    IDEMPOTENCY_TABLE: tableName('idempotency'),
    ...Object.fromEntries(
      Object.keys(TABLES).map((name) => [tableEnvVar(name), tableName(name as keyof typeof TABLES)]),
    ),
  };
}
