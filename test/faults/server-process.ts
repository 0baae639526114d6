import { closeSync, openSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { spawnWatched, type WatchedProcess } from '../../lib/local/watched-process';

export interface ServerProcessOptions {
  /** The port the server listens on, the same after every restart. */
  readonly port: number;
  /** The server's whole environment (`DYNAMODB_ENDPOINT`, `DEV_KEY_DIR`, `COMPLETER_INTERVAL_SECONDS`, …). */
  readonly env: NodeJS.ProcessEnv;
  /** Where its stdout and stderr go, appended across restarts. */
  readonly logFile: string;
  /** The repository root, where `retrysafe.config.ts` is. @default process.cwd() */
  readonly cwd?: string;
  /** How long to wait for it to answer `GET /health`. @default 60_000 */
  readonly startTimeoutMs?: number;
}

/**
 * `npm start`'s program (`retrysafe dev` over the example's config) as a process of its own, which can be killed outright and
 * started again on the same port. It runs as one Node process (`node --import tsx`, not the `tsx`
 * wrapper, which would put a second process between a signal and the server) under a watchdog
 * (`spawnWatched`), so it never outlives this process and a kill reaches it and nothing else. With
 * `DYNAMODB_ENDPOINT` set it starts no DynamoDB Local: the store, and its data, outlive the server.
 *
 * Its output goes straight to a file, not through a pipe to this process: were this process to die
 * first, the server would be left writing its last log lines into a broken pipe.
 */
export class ServerProcess {
  readonly url: string;
  #server: WatchedProcess | undefined;

  constructor(private readonly options: ServerProcessOptions) {
    this.url = `http://127.0.0.1:${options.port}`;
  }

  /** Its process group's id (the watchdog's pid) while it runs. */
  get pid(): number | undefined {
    return this.#running() ? this.#server?.child.pid : undefined;
  }

  /** Everything it printed so far, every run of it included (its log lines, one JSON object each). */
  output(): string {
    try {
      return readFileSync(this.options.logFile, 'utf8');
    } catch {
      return '';
    }
  }

  /** The end of its output, for an error report. */
  tail(chars = 4_000): string {
    return this.output().slice(-chars);
  }

  /** Starts it and resolves once it answers `GET /health`; rejects (and kills it) if it exits or takes too long. */
  async start(): Promise<void> {
    if (this.#running()) throw new Error('server process: already running');
    const log = openSync(this.options.logFile, 'a');
    let server: WatchedProcess;
    try {
      server = spawnWatched(
        process.execPath,
        ['--import', 'tsx', join('lib', 'cli', 'bin.ts'), 'dev', '--port', String(this.options.port)],
        { name: 'retrysafe-server', cwd: this.options.cwd, env: this.options.env, stdout: log, stderr: log },
      );
    } finally {
      closeSync(log); // the child holds its own copy
    }
    this.#server = server;
    const timeoutMs = this.options.startTimeoutMs ?? 60_000;
    const deadline = Date.now() + timeoutMs;
    try {
      for (;;) {
        if (!this.#running()) throw new Error(`exited with ${server.child.signalCode ?? server.child.exitCode}`);
        if (Date.now() > deadline) throw new Error(`did not answer GET /health within ${timeoutMs} ms`);
        const healthy = await fetch(`${this.url}/health`, { signal: AbortSignal.timeout(1_000) }).then(
          (answer) => answer.ok,
          () => false,
        );
        if (healthy) return;
        await sleep(100);
      }
    } catch (error) {
      await server.kill();
      throw new Error(`server process: ${(error as Error).message}\n${this.tail()}`);
    }
  }

  /** Kills it outright (SIGKILL: no handler runs, no claim is released) and waits until it is gone. */
  async kill(): Promise<void> {
    await this.#server?.kill();
  }

  /** Stops it as `kill <pid>` does (SIGTERM, which npm start handles like Ctrl-C), or kills it after `graceMs`. */
  async stop(graceMs = 5_000): Promise<void> {
    await this.#server?.stop(graceMs);
  }

  #running(): boolean {
    const child = this.#server?.child;
    return child !== undefined && child.exitCode === null && child.signalCode === null;
  }
}
