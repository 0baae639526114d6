import { type FSWatcher, watch } from 'node:fs';
import type { RetrysafeConfig } from '../dev/config';
import { type DevServer, startDevServer } from '../dev/dev-server';
import { allowedHostNames } from '../local/api-server';
import { spawnWatched, type WatchedProcess } from '../local/watched-process';
import { flagsOf, portFlag } from './args';
import { findConfig, loadConfig } from './load-config';
import { sampleArguments } from './sample-args';
import { devStateFile, removeDevState, writeDevState } from './store';

export const DEV_USAGE = `usage: retrysafe dev [--config FILE] [--port N] [--data DIR] [--watch]

Serves the app's tools on this machine as the stack deploys them: DynamoDB Local (unless
DYNAMODB_ENDPOINT is set), the idempotency table and the config's tables, POST /tools/<name>,
GET /tools/{tool}/operations/{key}, the app's reads, GET /tools, /openapi.json and the MCP endpoint
(/mcp) behind a local token issuer, and the completer on the table's stream. Blocks until Ctrl-C.

  --config FILE  the app's config (default: retrysafe.config.ts in this directory)
  --port N       the port on 127.0.0.1 (default PORT, else 3000; 0 picks a free one)
  --data DIR     keep DynamoDB Local's data in DIR across runs (default: in memory)
  --watch        reload the app's tools when a file under this directory changes (the data stays)`;

/** Folders a change in does not reload the app (installs, builds, the dev server's own state). */
const IGNORED = /(^|\/)(node_modules|\.git|cdk\.out|dist|\.local|coverage|\.pack)(\/|$)/;

/** How the printed commands name this program: the repository's own npm scripts, or the package's bin. */
function commandPrefix(env: NodeJS.ProcessEnv): { token: string; ops: string } {
  return env.npm_package_name === 'retrysafe' && env.npm_lifecycle_event === 'start'
    ? { token: 'npm run -s token --', ops: 'npx tsx lib/cli/bin.ts' }
    : { token: 'npx retrysafe token', ops: 'npx retrysafe' };
}

/** The app's reads the server serves, by name, as the banner and a reload say them. */
function readNames(config: RetrysafeConfig<unknown>): string {
  const reads = config.reads ?? [];
  if (reads.length === 0) return 'no reads (the config lists none)';
  return `${reads.length} read(s): ${reads.map((read) => read.name).join(', ')}`;
}

/**
 * What a developer needs on the first screen: the URLs (each read's route, as the server serves it), a
 * token, a curl line for one of their own tools.
 */
export function devBanner(
  server: DevServer,
  config: RetrysafeConfig<unknown>,
  env: NodeJS.ProcessEnv,
  watching: boolean,
): string {
  const prefix = commandPrefix(env);
  const port = server.port === 3000 ? '' : ` --port ${server.port}`;
  const tool = config.tools[0]!;
  const sample = sampleArguments(tool);
  const body = JSON.stringify(sample ?? { idempotency_key: 'k1' });
  const reads = new Set((config.reads ?? []).map((read) => read.name));
  const lines = [
    `retrysafe dev: ${config.tools.length} tool(s): ${config.tools.map((t) => t.name).join(', ')}; ${readNames(config)}`,
    `  REST  ${server.url}/tools/<name>   (GET ${server.url}/tools lists them)`,
    ...server.routes
      .filter((route) => reads.has(route.entry))
      .map((route) => `  READ  ${route.method} ${server.url}${route.path}   (${route.entry}; also over MCP)`),
    `  MCP   ${server.mcpUrl}`,
    `  DynamoDB ${server.dynamodb.started ? `Local ${server.dynamodb.endpoint} (${env.RETRYSAFE_DEV_DATA ? `data in ${env.RETRYSAFE_DEV_DATA}` : 'in memory'})` : server.dynamodb.endpoint}; tables: ${Object.values(server.tables).join(', ')}`,
    '',
    `Mint a token (issuer ${server.issuer}):`,
    `  TOKEN=$(${prefix.token} --tenant acme --user ada${port})`,
    '',
    `Call ${tool.name}${sample ? '' : ' (fill in its arguments: GET /tools lists its schema)'}:`,
    `  curl -s ${server.url}/tools/${tool.name} -H "Authorization: Bearer $TOKEN" \\`,
    `    -H 'content-type: application/json' -d '${body}'`,
    '',
    'Point an MCP client at it (streamable HTTP, bearer token):',
    `  claude mcp add --transport http ${env.npm_package_name || 'app'} ${server.mcpUrl} --header "Authorization: Bearer $TOKEN"`,
    `  npx @modelcontextprotocol/inspector   (Transport: Streamable HTTP, URL ${server.mcpUrl}, header Authorization)`,
    '',
    `Calls in flight: ${prefix.ops} calls --tenant acme    erase a tenant: ${prefix.ops} erase --tenant acme --include-domain`,
    watching ? '\nWatching for changes (node_modules, .git, cdk.out, dist and .local ignored).' : '',
    'Ctrl-C stops the server and DynamoDB Local.',
  ];
  return lines.filter((line, i) => line !== '' || lines[i - 1] !== '').join('\n');
}

/** `retrysafe dev`. With `--watch`, this process keeps DynamoDB Local and reruns the server in a child on each change. */
export async function devCommand(argv: readonly string[], cwd: string, env: NodeJS.ProcessEnv): Promise<number> {
  const { values, help } = flagsOf(
    argv,
    {
      config: { type: 'string' },
      port: { type: 'string' },
      data: { type: 'string' },
      watch: { type: 'boolean' },
      // Internal: the server child of --watch (it prints a short line instead of the banner when reloaded).
      'watch-child': { type: 'string' },
    },
    DEV_USAGE,
  );
  if (help) {
    console.log(DEV_USAGE);
    return 0;
  }
  // The flags first: a bad one is named before anything is looked for.
  const port = portFlag(values.port ?? env.PORT, DEV_USAGE) ?? 3000;
  const file = findConfig(cwd, values.config);
  if (values.watch) return watchAndServe({ cwd, env, file, port, dataDir: values.data });

  const config = loadConfig(file);
  if (values.data) env.RETRYSAFE_DEV_DATA = values.data;
  const started = Date.now();
  const server = await startDevServer(config, {
    port,
    env,
    ...(values.data ? { dataDir: values.data } : {}),
    allowedHosts: allowedHostNames(env),
    ...(env.INVOCATION_TIMEOUT_MS ? { timeoutMs: Number(env.INVOCATION_TIMEOUT_MS) } : {}),
    ...(env.GATEWAY_THROTTLE === 'off' ? { throttle: 'none' as const } : {}),
    ...(env.COMPLETER_INTERVAL_SECONDS ? { completerIntervalMs: Number(env.COMPLETER_INTERVAL_SECONDS) * 1000 } : {}),
  });
  const stateFile = devStateFile(cwd, env);
  writeDevState(stateFile, {
    pid: values['watch-child'] ? Number(values['watch-child']) : process.pid,
    endpoint: server.dynamodb.endpoint,
    accessKeyId: server.dynamodb.accessKeyId,
    secretAccessKey: env.AWS_SECRET_ACCESS_KEY ?? 'local',
    region: env.AWS_REGION ?? 'us-east-1',
    tables: server.tables,
  });
  if (values['watch-child'] && env.RETRYSAFE_DEV_RELOADED) {
    console.log(
      `reloaded in ${Date.now() - started} ms: ${config.tools.map((t) => t.name).join(', ')}; ${readNames(config)}`,
    );
  } else {
    console.log(devBanner(server, config, env, values['watch-child'] !== undefined));
  }
  await new Promise<void>((resolve) => {
    let stopping = false;
    async function stop(): Promise<void> {
      if (stopping) return;
      stopping = true;
      if (!values['watch-child']) removeDevState(stateFile, process.pid);
      await server.close();
      resolve();
    }
    process.once('SIGINT', () => void stop());
    process.once('SIGTERM', () => void stop());
  });
  return 0;
}

/**
 * `--watch`: DynamoDB Local is started here, once — its data outlives every reload — and the server runs
 * in a child process on it (the same program, the same flags), restarted when a file under `cwd`
 * changes. A config that fails to load after a change is reported; the next change tries again.
 */
async function watchAndServe({
  cwd,
  env,
  file,
  port,
  dataDir,
}: {
  cwd: string;
  env: NodeJS.ProcessEnv;
  file: string;
  port: number;
  dataDir?: string;
}): Promise<number> {
  // One port for every reload (--port 0: picked once, here), so the URL, and the tokens minted for its
  // issuer, stay good across reloads.
  const { freePort } = await import('../local/free-port');
  const servedPort = port === 0 ? await freePort() : port;
  const { checkJava } = await import('../dev/dev-server');
  const { startDynamoDBLocal } = await import('../local/dynamodb-local');
  let dynamodb: Awaited<ReturnType<typeof startDynamoDBLocal>> | undefined;
  if (!env.DYNAMODB_ENDPOINT) {
    checkJava();
    dynamodb = await startDynamoDBLocal(dataDir ? { dbPath: dataDir } : {});
  }
  const childEnv: NodeJS.ProcessEnv = {
    ...env,
    ...(dynamodb
      ? {
          DYNAMODB_ENDPOINT: dynamodb.endpoint,
          AWS_ACCESS_KEY_ID: dynamodb.credentials.accessKeyId,
          AWS_SECRET_ACCESS_KEY: dynamodb.credentials.secretAccessKey,
        }
      : {}),
    ...(dataDir ? { RETRYSAFE_DEV_DATA: dataDir } : {}),
  };
  const childArgv = [
    ...process.execArgv,
    process.argv[1]!,
    'dev',
    '--config',
    file,
    '--port',
    String(servedPort),
    '--watch-child',
    String(process.pid),
  ];
  // Under the watchdog: a server child never outlives this process, however this process ends.
  let child: WatchedProcess | undefined;
  let reloads = 0;
  function serve(): void {
    child = spawnWatched(process.execPath, childArgv, {
      name: 'retrysafe-dev',
      cwd,
      env: { ...childEnv, ...(reloads > 0 ? { RETRYSAFE_DEV_RELOADED: '1' } : {}) },
      stdout: 1,
      stderr: 2,
    });
  }
  async function stopChild(): Promise<void> {
    const running = child;
    child = undefined;
    await running?.stop(5_000);
  }
  serve();
  let pending: NodeJS.Timeout | undefined;
  let changed = new Set<string>();
  const watcher: FSWatcher = watch(cwd, { recursive: true }, (_event, name) => {
    const path = typeof name === 'string' ? name : '';
    if (path === '' || IGNORED.test(path)) return;
    changed.add(path);
    clearTimeout(pending);
    pending = setTimeout(async function reload() {
      const files = [...changed];
      changed = new Set();
      console.log(
        `changed: ${files.slice(0, 3).join(', ')}${files.length > 3 ? ` (+${files.length - 3})` : ''}; reloading`,
      );
      await stopChild();
      reloads += 1;
      serve();
    }, 200);
  });
  await new Promise<void>((resolve) => {
    async function stop(): Promise<void> {
      watcher.close();
      clearTimeout(pending);
      await stopChild();
      removeDevState(devStateFile(cwd, env), process.pid);
      await dynamodb?.stop();
      resolve();
    }
    process.once('SIGINT', () => void stop());
    process.once('SIGTERM', () => void stop());
  });
  return 0;
}
