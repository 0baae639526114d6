import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

/** `npm start`'s program as its own process (one Node process, so a signal reaches the server itself). */
function start(env: NodeJS.ProcessEnv): {
  server: ChildProcess;
  ready: Promise<{ url: string; dynamodbPort: string }>;
} {
  const server = spawn(process.execPath, ['--import', 'tsx', 'bin/start.ts', '--port', '0'], {
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  started.push(server);
  let output = '';
  const ready = new Promise<{ url: string; dynamodbPort: string }>((resolve, reject) => {
    server.stdout?.on('data', (chunk: Buffer) => {
      output += chunk.toString();
      const url = /retrysafe local API: (\S+)/.exec(output)?.[1];
      const dynamodbPort = /DynamoDB: http:\/\/127\.0\.0\.1:(\d+)/.exec(output)?.[1];
      if (url && dynamodbPort) resolve({ url, dynamodbPort });
    });
    server.once('exit', (code) => reject(new Error(`server exited with ${code}: ${output}`)));
  });
  return { server, ready };
}

/** Pids of Java processes serving DynamoDB Local on `port` (argv[0] is java, not its watchdog shell). */
function javaOn(port: string): string[] {
  return readdirSync('/proc')
    .filter((pid) => /^\d+$/.test(pid))
    .filter((pid) => {
      try {
        const argv = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
        return argv[0] === 'java' && argv[argv.indexOf('-port') + 1] === port;
      } catch {
        return false; // gone meanwhile
      }
    });
}

async function until(condition: () => boolean, timeoutMs: number): Promise<boolean> {
  const end = Date.now() + timeoutMs;
  while (Date.now() < end) {
    if (condition()) return true;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return condition();
}

const started: ChildProcess[] = [];
afterEach(() => {
  // Whatever a failed assertion left running.
  for (const server of started.splice(0)) if (server.exitCode === null) server.kill('SIGKILL');
});

describe('npm start', () => {
  // Its own DynamoDB Local and its own dev key, as on a fresh checkout.
  const { DYNAMODB_ENDPOINT: _shared, ...baseEnv } = process.env;
  const env = { ...baseEnv, DEV_KEY_DIR: mkdtempSync(join(tmpdir(), 'retrysafe-start-')) };

  it('serves the API with tokens from npm run token, and Ctrl-C stops it and DynamoDB Local', async () => {
    const { server, ready } = start(env);
    const { url, dynamodbPort } = await ready;
    const { stdout: token } = await run(
      process.execPath,
      ['--import', 'tsx', 'bin/token.ts', '--tenant', 'acme', '--user', 'ada'],
      {
        env,
      },
    );

    const health = await fetch(`${url}/health`);
    const tools = await fetch(`${url}/tools`, { headers: { authorization: `Bearer ${token.trim()}` } });
    const stopped = new Promise<number | null>((resolve) => server.once('exit', resolve));
    server.kill('SIGINT');

    expect(token).toMatch(/^[\w-]+\.[\w-]+\.[\w-]+\n$/); // the token, and nothing else
    expect(health.status).toBe(200);
    expect(tools.status).toBe(200);
    expect(await stopped).toBe(0);
    expect(await until(() => javaOn(dynamodbPort).length === 0, 10_000)).toBe(true);
  }, 90_000);

  it('leaves no Java behind when the server is killed outright', async () => {
    const { server, ready } = start(env);
    const { dynamodbPort } = await ready;
    expect(javaOn(dynamodbPort)).toHaveLength(1);

    server.kill('SIGKILL');

    expect(await until(() => javaOn(dynamodbPort).length === 0, 10_000)).toBe(true);
  }, 90_000);
});
