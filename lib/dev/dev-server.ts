import { spawnSync } from 'node:child_process';
import { createCompleter } from '../admin/completer';
import type { RouteDefinition } from '../api/routes';
import { type CoreServices, createCoreServices } from '../lambda/core-services';
import { createToolRuntime } from '../lambda/runtime';
import { type LocalApi, startLocalApi } from '../local/api-server';
import { completerPass } from '../local/completer-pass';
import { DevSigningKey } from '../local/dev-auth';
import { type DynamoDBLocal, startDynamoDBLocal } from '../local/dynamodb-local';
import { freePort } from '../local/free-port';
import { LocalRecheckQueue } from '../local/recheck-queue';
import { LocalStreamFeed } from '../local/stream-feed';
import { createStreamsClient } from '../local/streams-client';
import { createCompleterMetrics } from '../observability/metrics';
import { createTable } from '../store/create-tables';
import { IDEMPOTENCY_TABLE, tableEnvVar } from '../store/tables';
import type { RetrysafeConfig } from './config';
import { DevError } from './dev-error';

export interface DevServerOptions {
  /** @default 3000 (0: a free port) */
  readonly port?: number;
  /**
   * Keep DynamoDB Local's data in this folder across runs.
   * @default undefined (in memory: gone when the server stops)
   */
  readonly dataDir?: string;
  /**
   * The process's environment: the server sets the variables the entries read (`DYNAMODB_ENDPOINT`, the
   * credentials, `IDEMPOTENCY_TABLE`, `<NAME>_TABLE`), as Lambda sets a function's. A `DYNAMODB_ENDPOINT`
   * already set is used instead of starting DynamoDB Local.
   * @default process.env
   */
  readonly env?: NodeJS.ProcessEnv;
  /** Host names served besides the loopback ones (`ALLOWED_HOSTS`). @default [] */
  readonly allowedHosts?: readonly string[];
  /** Each request's deadline. @default the deployed functions' timeout */
  readonly timeoutMs?: number;
  /**
   * API Gateway's buckets, by route (`GATEWAY_THROTTLE=off`: none, for a load or fault run that sends
   * more than the gateway would let through).
   * @default the stack's (`lib/api/throttle.ts`)
   */
  readonly throttle?: 'none';
  /** Between two completer passes. @default 5_000 */
  readonly completerIntervalMs?: number;
}

/** A running dev server: the app's tools on the REST routes and the MCP endpoint the stack deploys. */
export interface DevServer {
  readonly url: string;
  readonly mcpUrl: string;
  readonly port: number;
  /** Every route it serves, the app's reads' included, as the stack routes them. */
  readonly routes: readonly RouteDefinition[];
  /** The dev issuer: tokens `retrysafe token` mints for this port. */
  readonly issuer: string;
  /** Where its data is, and whether this server started that DynamoDB Local. */
  readonly dynamodb: { readonly endpoint: string; readonly started: boolean; readonly accessKeyId: string };
  /** The tables it created (by their names in the app), each with its name in DynamoDB. */
  readonly tables: Readonly<Record<string, string>>;
  readonly core: CoreServices;
  close(): Promise<void>;
}

/** How long one local completer pass may take (its deadline, as a Lambda invocation's). */
const COMPLETER_PASS_MS = 10_000;

/** Java 17 or later, as DynamoDB Local needs: a clear error naming how to install it otherwise. */
export function checkJava(): void {
  const run = spawnSync('java', ['-version'], { encoding: 'utf8' });
  const install =
    'install a Java 17+ runtime (Debian/Ubuntu: apt-get install openjdk-17-jre-headless; macOS: brew install openjdk@17), ' +
    'or set DYNAMODB_ENDPOINT to a DynamoDB Local you run yourself';
  if (run.error) throw new DevError(`DynamoDB Local needs Java, and \`java\` is not on PATH: ${install}`);
  const major = Number(/version "(?:1\.)?(\d+)/.exec(`${run.stderr}${run.stdout}`)?.[1]);
  if (Number.isFinite(major) && major < 17) {
    throw new DevError(`DynamoDB Local needs Java 17 or later; \`java\` is version ${major}: ${install}`);
  }
}

/** The port, free: a clear error when something listens there already. */
async function claimPort(requested: number): Promise<number> {
  if (requested === 0) return freePort();
  const { createServer } = await import('node:net');
  await new Promise<void>((resolve, reject) => {
    const probe = createServer();
    probe.once('error', (error: NodeJS.ErrnoException) =>
      reject(
        error.code === 'EADDRINUSE'
          ? new DevError(
              `port ${requested} is in use: stop what listens there, or pass --port N (--port 0: any free port)`,
            )
          : error,
      ),
    );
    probe.listen(requested, '127.0.0.1', () => probe.close(() => resolve()));
  });
  return requested;
}

/**
 * Serves an app's tools as the stack deploys them, on this machine: DynamoDB Local (unless
 * `DYNAMODB_ENDPOINT` names one), the idempotency table and the app's tables from their schemas, every
 * tool's `POST /tools/<name>`, `get_operation`, the app's reads, `GET /tools`, `/openapi.json` and the
 * MCP endpoint behind the dev issuer (`retrysafe token`), and the completer fed by the table's stream.
 */
export async function startDevServer<Svc>(
  config: RetrysafeConfig<Svc>,
  options: DevServerOptions = {},
): Promise<DevServer> {
  const env = options.env ?? process.env;
  const port = await claimPort(options.port ?? 3000);
  env.AWS_REGION ||= 'us-east-1';
  env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ||= 'true';
  env.POWERTOOLS_LOG_LEVEL ||= 'INFO';
  env.PORT = String(port);

  let dynamodb: DynamoDBLocal | undefined;
  if (!env.DYNAMODB_ENDPOINT) {
    checkJava();
    try {
      dynamodb = await startDynamoDBLocal({ dbPath: options.dataDir });
    } catch (error) {
      throw new DevError(`DynamoDB Local did not start: ${(error as Error).message.trim()}`, { cause: error });
    }
    // Its data lives under this run's random access key (or the data folder's): a peer on the network
    // reaching DynamoDB Local's port with any other key sees none of it.
    env.DYNAMODB_ENDPOINT = dynamodb.endpoint;
    env.AWS_ACCESS_KEY_ID = dynamodb.credentials.accessKeyId;
    env.AWS_SECRET_ACCESS_KEY = dynamodb.credentials.secretAccessKey;
    delete env.AWS_SESSION_TOKEN;
  }
  env.AWS_ACCESS_KEY_ID ||= 'local';
  env.AWS_SECRET_ACCESS_KEY ||= 'local';

  // Each table where the construct would name it (`IDEMPOTENCY_TABLE`, `<NAME>_TABLE`).
  env[IDEMPOTENCY_TABLE.envVar] ||= IDEMPOTENCY_TABLE.defaultName;
  const appTables = Object.entries(config.tables ?? {});
  for (const [name, schema] of appTables) env[tableEnvVar(name)] ||= schema.defaultName ?? name;

  // The store's region and credentials, whatever else the SDK's chain would find.
  const core = createCoreServices(env, {
    region: env.AWS_REGION,
    credentials: { accessKeyId: env.AWS_ACCESS_KEY_ID, secretAccessKey: env.AWS_SECRET_ACCESS_KEY },
  });
  const cleanup: Array<() => Promise<void> | void> = [() => core.client.destroy(), () => dynamodb?.stop()];
  async function undo(): Promise<void> {
    for (const step of cleanup.reverse()) await Promise.resolve(step()).catch(() => undefined);
  }
  try {
    const tables: Record<string, string> = { idempotency: env[IDEMPOTENCY_TABLE.envVar]! };
    await createTable(core.client, IDEMPOTENCY_TABLE, tables.idempotency!);
    for (const [name, schema] of appTables) {
      tables[name] = core.tableName(name);
      await createTable(core.client, schema, tables[name]!);
    }
    const services = config.services(core);
    const runtime = createToolRuntime(core, env);
    const key = await DevSigningKey.loadOrCreate(env);
    const api: LocalApi = await startLocalApi({
      tools: config.tools,
      services,
      logger: core.logger,
      runtime,
      reads: config.reads ?? [],
      verifyToken: (token) => key.verify(token),
      issuer: key.settings.issuer,
      port,
      allowedHosts: options.allowedHosts ?? [],
      ...(options.timeoutMs === undefined ? {} : { timeoutMs: options.timeoutMs }),
      ...(options.throttle === undefined ? {} : { throttle: options.throttle }),
    });
    cleanup.push(() => api.close());
    cleanup.push(startCompleterLoop(config, { core, services, runtime, env, table: tables.idempotency!, options }));
    return {
      url: api.url,
      mcpUrl: `${api.url}/mcp`,
      port,
      routes: api.routes,
      issuer: key.settings.issuer,
      dynamodb: {
        endpoint: env.DYNAMODB_ENDPOINT,
        started: dynamodb !== undefined,
        accessKeyId: env.AWS_ACCESS_KEY_ID,
      },
      tables,
      core,
      close: undo,
    };
  } catch (error) {
    await undo();
    throw error;
  }
}

/**
 * The completer, fed as the stack feeds it — the table's stream, then the rechecks that are due — one
 * pass every `completerIntervalMs` (the stack batches the stream for 10 s). Returns its stop.
 */
function startCompleterLoop<Svc>(
  config: RetrysafeConfig<Svc>,
  parts: {
    readonly core: CoreServices;
    readonly services: Svc;
    readonly runtime: ReturnType<typeof createToolRuntime>;
    readonly env: NodeJS.ProcessEnv;
    readonly table: string;
    readonly options: DevServerOptions;
  },
): () => void {
  const { core, services, runtime, env, table, options } = parts;
  const streams = createStreamsClient(env);
  const feed = new LocalStreamFeed(streams, table);
  const queue = new LocalRecheckQueue();
  const completer = createCompleter(
    { services: { ...services, client: core.client, logger: core.logger }, runtime, tools: config.tools, queue },
    env,
  );
  const recordCompleter = createCompleterMetrics(env.POWERTOOLS_SERVICE_NAME || 'retrysafe');
  const intervalMs = options.completerIntervalMs ?? 5_000;
  let stopped = false;
  let next: NodeJS.Timeout | undefined;
  async function runPass(): Promise<void> {
    try {
      const end = Date.now() + COMPLETER_PASS_MS;
      const report = await completerPass(
        completer,
        feed,
        queue,
        { getRemainingTimeInMillis: () => end - Date.now() },
        {
          logger: core.logger,
        },
      );
      const { figures, rechecks } = report;
      const delivered = Object.values(rechecks.outcomes).reduce((sum, n) => sum + n, rechecks.failedMessageIds.length);
      // Locally only passes that scheduled, delivered or gave up on something are logged.
      if (figures.rechecksScheduled + figures.gaveUp + delivered === 0) return;
      recordCompleter(figures);
      core.logger.info('completer pass', {
        recordsRead: report.recordsRead,
        ...rechecks.outcomes,
        ...figures,
        waiting: queue.size,
        deadLetters: queue.deadLetters.length,
      });
    } catch (error) {
      if (!stopped) core.logger.error('completer pass failed', { error: error as Error });
    } finally {
      // One pass at a time: the next is scheduled once this one ended.
      if (!stopped) next = setTimeout(runPass, intervalMs);
    }
  }
  next = setTimeout(runPass, intervalMs);
  return function stopCompleter() {
    stopped = true;
    clearTimeout(next);
    streams.destroy();
  };
}
