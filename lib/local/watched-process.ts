import { type ChildProcess, spawn } from 'node:child_process';

/** A child process that cannot outlive this one. */
export interface WatchedProcess {
  /** The watchdog shell; the command runs in its process group. */
  readonly child: ChildProcess;
  /** Asks the command to stop (SIGTERM), kills the group if it has not exited within `graceMs`, and waits. */
  stop(graceMs?: number): Promise<void>;
  /** Kills the whole group outright (SIGKILL: no handler runs) and waits until the watchdog is gone. */
  kill(): Promise<void>;
}

export interface WatchedProcessOptions {
  /** The watchdog's `$0`, as `ps` shows it. */
  readonly name: string;
  readonly cwd?: string;
  readonly env?: NodeJS.ProcessEnv;
  /** Where the command's stdout goes: a pipe to this process, nowhere, or an open file descriptor. @default 'pipe' */
  readonly stdout?: 'pipe' | 'ignore' | number;
  /** Where its stderr goes. @default 'pipe' */
  readonly stderr?: 'pipe' | 'ignore' | number;
}

/**
 * `sh -c` script: start the command and wait for it; beside it, a reader that stops the command
 * (SIGTERM) when stdin closes. The shell exits when the command does (so a failed start is seen at
 * once), and the command dies with its parent. stdin is kept as fd 3: a background job's own stdin
 * would be /dev/null.
 */
const WATCHDOG = [
  'exec 3<&0',
  '"$@" 3<&- & pid=$!',
  '(read _ <&3; kill "$pid" 2>/dev/null) & reader=$!',
  'wait "$pid"; status=$?',
  // The command is gone: stop the reader too, so it can never signal a pid the system has since reused.
  'kill "$reader" 2>/dev/null',
  'exit "$status"',
].join('; ');

function exited(child: ChildProcess): boolean {
  return child.exitCode !== null || child.signalCode !== null;
}

function killGroup(child: ChildProcess, signal: NodeJS.Signals, evenIfExited = false): void {
  if (child.pid === undefined) return;
  if (!evenIfExited && exited(child)) return;
  try {
    process.kill(-child.pid, signal);
  } catch {
    // already gone
  }
}

/**
 * Starts `command` under a small shell watchdog that holds this process's end of a pipe: when this
 * process goes away for any reason — `stop()`, a crash, even SIGKILL — the pipe closes, `read` returns
 * and the command is stopped. It runs in a process group of its own, so signals reach it and its
 * children and nothing else.
 *
 * A command that outlives this process for the moment its stop takes should not write into pipes to
 * it: give it a file descriptor for its output instead.
 */
export function spawnWatched(command: string, args: readonly string[], options: WatchedProcessOptions): WatchedProcess {
  const child = spawn('sh', ['-c', WATCHDOG, options.name, command, ...args], {
    cwd: options.cwd,
    env: options.env,
    stdio: ['pipe', options.stdout ?? 'pipe', options.stderr ?? 'pipe'],
    detached: true,
  });
  child.stdin?.on('error', () => undefined); // a watchdog already gone: nothing to stop
  // A parent that exits without calling stop() kills the whole group at once.
  const killOnExit = () => killGroup(child, 'SIGKILL');
  process.once('exit', killOnExit);
  child.once('exit', () => {
    process.removeListener('exit', killOnExit);
    killGroup(child, 'SIGKILL', true); // the stdin reader, or the command, if the shell went first
  });

  function whenExited(): Promise<void> {
    return exited(child) ? Promise.resolve() : new Promise((resolve) => child.once('exit', () => resolve()));
  }

  return {
    child,
    async stop(graceMs = 5_000) {
      if (exited(child)) return;
      const gone = whenExited();
      child.stdin?.end();
      const timer = setTimeout(() => killGroup(child, 'SIGKILL'), graceMs);
      await gone;
      clearTimeout(timer);
    },
    async kill() {
      const gone = whenExited();
      killGroup(child, 'SIGKILL');
      await gone;
    },
  };
}
