import { Logger } from '@aws-lambda-powertools/logger';
import type { LogLevel } from '@aws-lambda-powertools/logger/types';
import type { Tracer } from '@aws-lambda-powertools/tracer';
import type { DynamoDBClient, DynamoDBClientConfig } from '@aws-sdk/client-dynamodb';
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { errorSafeReplacer } from '../observability/log-replacer';
import { createDocumentClient, createDynamoDBClient } from '../store/client';
import { tableEnvVar } from '../store/tables';
import type { ReadModule } from '../tools/read-module';
import type { ToolModule } from '../tools/tool-module';

/**
 * What every entry point of an app gets, built once per process from its environment: the DynamoDB
 * clients, the logger, and the names of the app's tables. An app composes its tools' services from it.
 */
export interface CoreServices {
  readonly client: DynamoDBClient;
  readonly documents: DynamoDBDocumentClient;
  readonly logger: Logger;
  /**
   * The name of the app's table `name` (its name in a tool's `access`), from `<NAME>_TABLE` — set by the
   * construct on every function and by the test store. Throws, naming the variable, when it is unset.
   */
  tableName(name: string): string;
}

/** What an app's entry points compose its tools' services with: one function, shared by all of them. */
export type ComposeServices<Svc> = (core: CoreServices) => Svc;

/**
 * The core services from `env`. The DynamoDB client takes its endpoint from `env` and everything else
 * (region, credentials) from the SDK's own chain, unless `clientConfig` gives it (the test store does).
 */
export function createCoreServices(
  env: NodeJS.ProcessEnv = process.env,
  clientConfig: DynamoDBClientConfig = {},
): CoreServices {
  const client = createDynamoDBClient(env, clientConfig);
  return {
    client,
    documents: createDocumentClient(client),
    logger: new Logger({
      serviceName: env.POWERTOOLS_SERVICE_NAME || 'retrysafe',
      // Powertools reads the level from the process's environment; an `env` of its own may set another.
      ...(env.POWERTOOLS_LOG_LEVEL ? { logLevel: env.POWERTOOLS_LOG_LEVEL as LogLevel } : {}),
      // An error is logged by what it is, never by the data it carries (an SDK error's `Item`).
      jsonReplacerFn: errorSafeReplacer,
    }),
    tableName(name) {
      const variable = tableEnvVar(name);
      const value = env[variable];
      if (!value) throw new Error(`${variable} is not set: no table named ${name} in this environment`);
      return value;
    },
  };
}

/**
 * X-Ray, as deep as the deployment asks (as `lambdas/shared/process.ts` does for this repository's own
 * entries): Lambda's active tracing records every invocation; the Powertools Tracer (from the Powertools
 * layer, not the bundle) adds a subsegment per AWS call — and costs every call of the process, so it is
 * loaded only on Lambda, unless `POWERTOOLS_TRACE_ENABLED` is `false`.
 */
export function createTracer(env: NodeJS.ProcessEnv = process.env): Tracer | undefined {
  if (!env.AWS_EXECUTION_ENV || env.POWERTOOLS_TRACE_ENABLED?.toLowerCase() === 'false') return undefined;
  // Required here, not imported at the top: a process that does not trace never loads the X-Ray SDK.
  const { Tracer } = require('@aws-lambda-powertools/tracer') as typeof import('@aws-lambda-powertools/tracer');
  return new Tracer({ serviceName: env.POWERTOOLS_SERVICE_NAME || 'retrysafe' });
}

/** The process's core services, traced where the deployment traces (`createTracer`). */
export function processServices(env: NodeJS.ProcessEnv = process.env): CoreServices {
  const core = createCoreServices(env);
  createTracer(env)?.captureAWSv3Client(core.client);
  return core;
}

/**
 * An app's tools, each bound to (a part of) the services `Svc`. The entries that serve several tools take
 * them as `ToolsOver<NoInfer<Svc>>`: `Svc` is what the app's compose function builds, and each tool's own
 * services (a `Pick` of them) must be part of it.
 */
// biome-ignore lint/suspicious/noExplicitAny: tools of every schema and receipt, bound to the same services
export type ToolsOver<Svc> = readonly ToolModule<string, any, any, Svc>[];

/** An app's own reads (`defineReadModule`), each bound to (a part of) the services `Svc`, as `ToolsOver`. */
// biome-ignore lint/suspicious/noExplicitAny: reads of every schema, bound to the same services
export type ReadsOver<Svc> = readonly ReadModule<string, any, any, Svc>[];
