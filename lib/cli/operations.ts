import { CALL_IN_FLIGHT_STATES, type CallInFlight, callsInFlight } from '../admin/calls-in-flight';
import { createCompleter } from '../admin/completer';
import { parseEraseRequest } from '../admin/erase-request';
import { eraseTenant } from '../admin/erase-tenant';
import type { RetrysafeConfig } from '../dev/config';
import { DevError } from '../dev/dev-error';
import { RERUN_LOCK_MS } from '../idempotency/backoff';
import { createToolRuntime } from '../lambda/runtime';
import { type CompleterPassReport, completerPass } from '../local/completer-pass';
import { DevSigningKey } from '../local/dev-auth';
import { LocalRecheckQueue } from '../local/recheck-queue';
import { LocalStreamFeed } from '../local/stream-feed';
import { createStreamsClient } from '../local/streams-client';
import { flagsOf, portFlag, UsageError } from './args';
import { findConfig, loadConfig } from './load-config';
import { openStore, STORE_FLAGS, STORE_USAGE, type Store } from './store';

const TOKEN_USAGE = `usage: retrysafe token --tenant TENANT --user USER [--ttl 1h] [--port N]

Prints a token (and nothing else on stdout) that retrysafe dev on that port accepts: signed by the dev
key in .local/ (DEV_KEY_DIR), issuer http://127.0.0.1:<port> (or JWT_ISSUER).

  --tenant T   the token's tenant (every record and item it writes is scoped to it)
  --user U     the token's user (sub)
  --ttl D      how long it is valid, as 1h, 30m, 7d (default 1h)
  --port N     the dev server's port (default PORT, else 3000)`;

export async function tokenCommand(argv: readonly string[], _cwd: string, env: NodeJS.ProcessEnv): Promise<number> {
  const { values, help } = flagsOf(
    argv,
    {
      tenant: { type: 'string' },
      user: { type: 'string' },
      ttl: { type: 'string', default: '1h' },
      port: { type: 'string' },
    },
    TOKEN_USAGE,
  );
  if (help) return printed(TOKEN_USAGE);
  if (!values.tenant || !values.user) throw new UsageError('--tenant and --user are both required', TOKEN_USAGE);
  if (!/^\d+\s*[smhdw]$/.test(values.ttl ?? ''))
    throw new UsageError(`--ttl: "${values.ttl}" is not a duration like 1h`, TOKEN_USAGE);
  const port = portFlag(values.port, TOKEN_USAGE);
  const key = await DevSigningKey.loadOrCreate(port === undefined ? env : { ...env, PORT: String(port) });
  process.stdout.write(`${await key.mint(values.tenant, values.user, values.ttl)}\n`);
  return 0;
}

function printed(text: string): number {
  console.log(text);
  return 0;
}

/** The config when the command needs one; with `optional`, none when no file is there. */
function configFor(cwd: string, given: string | undefined, optional: boolean): RetrysafeConfig<unknown> | undefined {
  try {
    return loadConfig(findConfig(cwd, given));
  } catch (error) {
    if (optional && given === undefined && error instanceof DevError && error.message.startsWith('no '))
      return undefined;
    throw error;
  }
}

/** A call's state as `retrysafe calls` prints it: with "(queued)" and "(gives up: …)" where they hold. */
function stateShown(call: CallInFlight): string {
  const notes = [call.queued ? 'queued' : undefined, call.givesUp && `gives up: ${call.givesUp}`].filter(Boolean);
  return notes.length === 0 ? call.state : `${call.state} (${notes.join(', ')})`;
}

const CALLS_USAGE = `usage: retrysafe calls --tenant T [--state ${CALL_IN_FLIGHT_STATES.join('|')}] [--json] [--config FILE] [store flags]

Lists a tenant's calls in flight, oldest first: tool, state, age, attempts, when the lock ends, user and
client key. pending: an attempt holds the lock (running, or parked until a provider answers); abandoned:
the lock ended with no outcome, and the completer or a retry with the same key finishes it; stalled: the
completer gave up on it after its attempts, and only a retry with the same key finishes it. "(queued)":
none of its attempts has run the tool yet (a hand-off, a dedupe window's holder in the way): nothing happened.
"(gives up: attempts|expiring)": abandoned, and the completer's next look gives it up rather than re-run it
(its attempts, 8, are used up; or its record expires before a re-run is due): only a retry with the same
key finishes it.
Cost: one Scan of the idempotency table filtered on the tenant (record keys are hashes; an index by tenant
would cost every call a write unit): its read units are printed.

${STORE_USAGE}`;

function seconds(s: number | undefined): string {
  if (s === undefined) return '?';
  return s < 120 ? `${s}s` : s < 7200 ? `${Math.round(s / 60)}m` : `${Math.round(s / 3600)}h`;
}

export async function callsCommand(argv: readonly string[], cwd: string, env: NodeJS.ProcessEnv): Promise<number> {
  const { values, help } = flagsOf(
    argv,
    {
      tenant: { type: 'string' },
      state: { type: 'string' },
      json: { type: 'boolean' },
      config: { type: 'string' },
      ...STORE_FLAGS,
    },
    CALLS_USAGE,
  );
  if (help) return printed(CALLS_USAGE);
  if (!values.tenant) throw new UsageError('--tenant is required', CALLS_USAGE);
  if (values.state !== undefined && !(CALL_IN_FLIGHT_STATES as readonly string[]).includes(values.state)) {
    throw new UsageError(`--state: "${values.state}" is not ${CALL_IN_FLIGHT_STATES.join(', ')}`, CALLS_USAGE);
  }
  const config = configFor(cwd, values.config, true);
  const store = openStore(values, config?.tables ?? {}, CALLS_USAGE, cwd, env);
  try {
    const ttlSecondsByTool = Object.fromEntries(
      (config?.tools ?? [])
        .filter((tool) => tool.ttlSeconds !== undefined)
        .map((tool) => [tool.name, tool.ttlSeconds!]),
    );
    const nowMs = Date.now();
    const report = await callsInFlight(store.core.client, store.idempotencyTable, values.tenant, {
      ...(values.state ? { state: values.state as CallInFlight['state'] } : {}),
      ttlSecondsByTool,
      nowMs,
    });
    if (values.json) {
      console.log(JSON.stringify({ tenant: values.tenant, store: store.where, ...report }, null, 2));
      return 0;
    }
    console.log(
      `tenant ${values.tenant}: ${report.calls.length} call(s) in flight — ${store.where}; the Scan read ${report.readUnits} units`,
    );
    if (report.calls.length > 0) {
      const rows = report.calls.map((call) => [
        call.tool,
        stateShown(call),
        seconds(call.ageSeconds),
        String(call.attempts),
        call.lockEndsMs === undefined
          ? '?'
          : call.lockEndsMs >= nowMs
            ? `in ${seconds(Math.ceil((call.lockEndsMs - nowMs) / 1000))}`
            : `${seconds(Math.round((nowMs - call.lockEndsMs) / 1000))} ago`,
        call.user ?? '?',
        call.clientKey ?? '?',
      ]);
      const header = ['TOOL', 'STATE', 'AGE', 'ATTEMPTS', 'LOCK ENDS', 'USER', 'KEY'];
      const widths = header.map((title, i) => Math.max(title.length, ...rows.map((row) => row[i]!.length)));
      for (const row of [header, ...rows])
        console.log(
          `  ${row
            .map((cell, i) => cell.padEnd(widths[i]!))
            .join('  ')
            .trimEnd()}`,
        );
    }
    return 0;
  } finally {
    store.core.client.destroy();
  }
}

const COMPLETE_USAGE = `usage: retrysafe complete [--until-settled [--max-wait 90m]] [--config FILE] [store flags]

The completer, as the stack runs it on the table's stream: reads the idempotency table's stream from its
trim horizon and re-runs every call whose worker died, or whose attempts failed, once its record says it
is due (its lock's end, then a backoff per attempt: 30 s, 60 s, … 15 min); after its attempts it gives
up on a call (stalled: only a resend with its key finishes it). It waits for what is due within a few
seconds, then prints when the next call is due: run it again after then — from cron every minute, it
moves every call on the same schedule as the stack's completer. On AWS the deployed completer does this
by itself.

  --until-settled   keep running until no call is left that the completer moves (each finished or
                    stalled); exits 3 when --max-wait ends first
  --max-wait D      the longest --until-settled runs, as 90s, 45m, 2h (default 90m: a call that fails
                    every time is given up on within about 75 min)

${STORE_USAGE}`;

/** One pass's deadline, as one completer invocation's: a re-run's lock the schedule allows for. */
const PASS_MS = RERUN_LOCK_MS;
/** Rechecks due within this long are waited for (an abandoned call's first one is due at once). */
const WAIT_FOR_DUE_MS = 5_000;
/** `--until-settled`'s default bound. */
const DEFAULT_MAX_WAIT = '90m';
/** The exit code of `--until-settled` when its bound ended with calls still in flight. */
export const EXIT_NOT_SETTLED = 3;

/** A duration flag (`90s`, `45m`, `2h`) in ms, or a `UsageError` naming it. */
function durationFlag(name: string, value: string, usage: string): number {
  const match = /^(\d+)\s*([smh])$/.exec(value);
  if (!match) throw new UsageError(`--${name}: "${value}" is not a duration like 90s, 45m or 2h`, usage);
  return Number(match[1]) * { s: 1_000, m: 60_000, h: 3_600_000 }[match[2] as 's' | 'm' | 'h'];
}

/** An instant as an operator reads it: `21:45:10 UTC (in 4 min 30 s)`. */
export function dueWords(atMs: number, nowMs: number): string {
  const seconds = Math.max(0, Math.ceil((atMs - nowMs) / 1000));
  const clock = new Date(atMs).toISOString().slice(11, 19);
  const minutes = Math.floor(seconds / 60);
  const wait = minutes === 0 ? `${seconds} s` : `${minutes} min${seconds % 60 === 0 ? '' : ` ${seconds % 60} s`}`;
  return `${clock} UTC (in ${wait})`;
}

export async function completeCommand(argv: readonly string[], cwd: string, env: NodeJS.ProcessEnv): Promise<number> {
  const { values, help } = flagsOf(
    argv,
    {
      config: { type: 'string' },
      'until-settled': { type: 'boolean' },
      'max-wait': { type: 'string' },
      ...STORE_FLAGS,
    },
    COMPLETE_USAGE,
  );
  if (help) return printed(COMPLETE_USAGE);
  if (values['max-wait'] !== undefined && !values['until-settled'])
    throw new UsageError('--max-wait: only with --until-settled', COMPLETE_USAGE);
  const untilSettled = values['until-settled'] === true;
  const maxWaitMs = durationFlag('max-wait', values['max-wait'] ?? DEFAULT_MAX_WAIT, COMPLETE_USAGE);
  const config = configFor(cwd, values.config, false)!;
  const store = openStore(values, config.tables ?? {}, COMPLETE_USAGE, cwd, env);
  const streams = createStreamsClient(store.env);
  try {
    const queue = new LocalRecheckQueue();
    const services = config.services(store.core);
    const runtime = createToolRuntime(store.core, store.env);
    const completer = createCompleter(
      {
        services: { ...(services as object), client: store.core.client, logger: store.core.logger },
        runtime,
        tools: config.tools,
        queue,
      },
      store.env,
    );
    const feed = new LocalStreamFeed(streams, store.idempotencyTable);
    const pass = () => {
      const end = Date.now() + PASS_MS;
      return completerPass(completer, feed, queue, { getRemainingTimeInMillis: () => end - Date.now() });
    };
    // Waited for: what is due within a few seconds — or, until settled, whatever is due before the bound.
    const waitUntil = Date.now() + (untilSettled ? maxWaitMs : WAIT_FOR_DUE_MS);
    const passes: CompleterPassReport[] = [await pass()];
    for (let next = queue.nextDueAt(); next !== undefined && next <= waitUntil; next = queue.nextDueAt()) {
      await new Promise((resolve) => setTimeout(resolve, Math.max(0, next! - Date.now())));
      passes.push(await pass());
    }
    const total = (count: (pass: CompleterPassReport) => number) => passes.reduce((sum, pass) => sum + count(pass), 0);
    console.log(
      `completer (${store.where}): ${total((pass) => pass.recordsRead)} stream records read, ` +
        `${total((pass) => pass.figures.rechecksScheduled)} rechecks scheduled; ` +
        `${total((pass) => pass.rechecks.outcomes.finished)} calls finished, ` +
        `${total((pass) => pass.rechecks.outcomes.settled)} already settled, ` +
        `${total((pass) => pass.rechecks.failedMessageIds.length)} rechecks failed, ` +
        `${total((pass) => pass.gaveUp)} given up (stalled: only a resend with the key finishes it)`,
    );
    const due = queue.nextCallDueAt();
    if (queue.deadLetters.length > 0) {
      // A recheck that failed every delivery (the store refused it): its call is not known to be settled.
      console.log(
        `${queue.deadLetters.length} recheck(s) failed every delivery (see the errors above): their calls may still be in flight — run again`,
      );
      return EXIT_NOT_SETTLED;
    }
    if (due === undefined) {
      console.log('nothing left in flight for the completer: every call is settled or stalled');
      return 0;
    }
    console.log(
      `${queue.size} recheck(s) still waiting (a call running, or backing off after a failed attempt): ` +
        `the next is due at ${dueWords(due, Date.now())}: run again after ${new Date(due).toISOString()}`,
    );
    return untilSettled ? EXIT_NOT_SETTLED : 0;
  } finally {
    streams.destroy();
    store.core.client.destroy();
  }
}

/** `retrysafe erase`'s exit code when it left something for later: run it again (`retryAfter`). */
export const ERASE_PARTIAL_EXIT_CODE = 3;

const ERASE_USAGE = `usage: retrysafe erase --tenant T [--include-domain] [--dry-run] [--json] [--config FILE] [store flags]

Erases a tenant (the package's README.md, "Your own tools"): its idempotency records become tombstones
or go, and with --include-domain its items in the app's own tables — each table whose schema in the config
declares a tenantAttribute (a table declared keptByErase is kept, and said so). A call still in flight is kept and
reported, and an app table waits while a call in flight may still commit to it: one whose tool's access
names the table, or whose tool the config does not list. It prints what it left and when to run it again
(a live call's lock end, the completer's next look at an abandoned one). Final and safe to rerun.

  --include-domain  also the app's own tables
  --dry-run         count only: nothing is deleted
  --json            the report as JSON (complete, deferred, retryAfter, …)

Exit codes: 0 erased (nothing left), ${ERASE_PARTIAL_EXIT_CODE} something left for later — run it again after the
time printed (a dry run: the erase would leave it), 2 a usage error, 1 any other failure.

${STORE_USAGE}`;

/** An ISO time as the CLI prints it: the UTC clock time, then the ISO time. */
function clockTime(iso: string): string {
  return `${iso.slice(11, 19)} UTC (${iso})`;
}

export async function eraseCommand(argv: readonly string[], cwd: string, env: NodeJS.ProcessEnv): Promise<number> {
  const { values, help } = flagsOf(
    argv,
    {
      tenant: { type: 'string' },
      'include-domain': { type: 'boolean' },
      'dry-run': { type: 'boolean' },
      json: { type: 'boolean' },
      config: { type: 'string' },
      ...STORE_FLAGS,
    },
    ERASE_USAGE,
  );
  if (help) return printed(ERASE_USAGE);
  let request: ReturnType<typeof parseEraseRequest>;
  try {
    request = parseEraseRequest({
      tenant: values.tenant,
      includeDomain: values['include-domain'] ?? false,
      dryRun: values['dry-run'] ?? false,
    });
  } catch (error) {
    throw new UsageError(`--${(error as Error).message.replace(/^request\./, '')}`, ERASE_USAGE);
  }
  const config = configFor(cwd, values.config, !request.includeDomain);
  const store = openStore(values, config?.tables ?? {}, ERASE_USAGE, cwd, env);
  try {
    const report = await eraseTenant(store.core.client, request, store.env, config?.tables ?? {}, config?.tools);
    const exitCode = report.complete ? 0 : ERASE_PARTIAL_EXIT_CODE;
    if (values.json) {
      console.log(JSON.stringify({ store: store.where, ...report }, null, 2));
      return exitCode;
    }
    console.log(`tenant ${report.tenant} — ${store.where}${report.dryRun ? ' (dry run: nothing deleted)' : ''}`);
    for (const [table, counts] of Object.entries(report.tables)) {
      console.log(
        `  ${table.padEnd(12)} found ${counts.found}, deleted ${counts.deleted}, in flight (kept) ${counts.inFlight}, read units ${counts.readUnits}`,
      );
    }
    for (const [table, why] of Object.entries(report.kept)) console.log(`  ${table.padEnd(12)} kept: ${why}`);
    const { inFlight, completed } = report.unattributed;
    if (inFlight + completed > 0) {
      console.log(
        `  ${'idempotency'.padEnd(12)} ${inFlight} in flight and ${completed} completed record(s) with no tenant (a Powertools handler's): whoever's they are, not written, taken as this tenant's`,
      );
    }
    const found = Object.values(report.tables).reduce((sum, counts) => sum + counts.found, 0);
    if (found === 0) console.log('  nothing to erase (already erased, or no such tenant)');
    if (report.complete) return 0;
    const calls = Object.entries(report.callsInFlight)
      .map(([state, count]) => `${count} ${state}`)
      .join(', ');
    console.log(`left for later${calls ? ` (calls in flight: ${calls})` : ''}:`);
    for (const left of report.deferred) {
      const what =
        left.reason === 'calls_in_flight'
          ? `not erased: ${left.calls} call(s) in flight may still write to it`
          : `${left.items} item(s) kept, ${left.calls} call(s) in flight hold them`;
      console.log(`  ${left.table.padEnd(12)} ${what}`);
    }
    console.log(
      report.retryAfter === undefined
        ? 'run again once the calls in flight settled: none will by itself (a stalled call settles by a resend with its key, or by erase --include-domain)'
        : `run again after ${clockTime(report.retryAfter)}`,
    );
    return exitCode;
  } finally {
    store.core.client.destroy();
  }
}

export type { Store };
