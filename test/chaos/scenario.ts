import type { Services } from '../../app/services';
import type { LossyProxy } from '../faults/lossy-proxy';
import type { OutageProxy } from '../faults/outage-proxy';
import type { ServerProcess } from '../faults/server-process';
import { auditTenant } from './audit';
import type { ChaosCaller } from './tally';

/** What every scenario runs against: the server process, the store's proxy, the tables, a way to get tokens. */
export interface ChaosContext {
  /** Names this run's tenants, so a rerun on the same store never meets an earlier run's rows. */
  readonly runId: string;
  /** The `npm start` process: scenarios send to its url, and one of them kills and restarts it. */
  readonly server: ServerProcess;
  /** The proxy between the server and DynamoDB Local, where the store outage happens. */
  readonly store: OutageProxy;
  /** Services on DynamoDB Local itself (not through the proxy): what the audit reads the tables with. */
  readonly services: Services;
  /** A token the server accepts, for a tenant (the user is the scenario's agent). */
  mintToken(tenant: string): Promise<string>;
  /** One progress line. */
  log(line: string): void;
}

/** The figures of one scenario, and every violation it found. */
export interface ScenarioResult {
  readonly name: string;
  /** Intents' calls made (or, fuzzing, requests sent). */
  readonly calls: number;
  /** HTTP requests sent, retries included. */
  readonly requests: number;
  /** Requests whose answer never reached the client: lost by the proxy, refused, reset, cut by a kill. */
  readonly lost: number;
  readonly retries: number;
  /** How calls (or, fuzzing, answers) ended, by kind. */
  readonly outcomes: Readonly<Record<string, number>>;
  readonly doubleEffects: number;
  /** 503 `unavailable` answers: allowed, and retried by the client. */
  readonly unavailable: number;
  /** Answers of 500 or more other than 503: each one a violation. */
  readonly otherServerErrors: number;
  readonly durationMs: number;
  /** What else a reader of the report needs: the outage's length, what was in flight at the kill. */
  readonly notes: readonly string[];
  readonly violations: readonly string[];
}

/** At most this many lines of one kind of violation are kept; the count says the rest. */
const MAX_LINES_PER_KIND = 5;

function capped(kind: string, lines: readonly string[]): string[] {
  const shown = lines.slice(0, MAX_LINES_PER_KIND).map((line) => `${kind}: ${line}`);
  if (lines.length > MAX_LINES_PER_KIND) shown.push(`${kind}: … and ${lines.length - MAX_LINES_PER_KIND} more`);
  return shown;
}

/**
 * Ends a scenario that ran through the retrying client: audits its tenant's tables against its calls
 * and turns everything that must not happen into violations — a call that did not settle, a double
 * effect, a disagreement, unfinished work, an answer of 500 or more other than 503.
 */
export async function finishScenario(
  context: ChaosContext,
  scenario: {
    readonly name: string;
    readonly tenant: string;
    readonly caller: ChaosCaller;
    readonly startedAt: number;
    readonly proxy?: LossyProxy;
    readonly notes?: readonly string[];
    readonly violations?: readonly string[];
  },
): Promise<ScenarioResult> {
  const { tally } = scenario.caller;
  const { proxy } = scenario;
  const durationMs = Date.now() - scenario.startedAt;
  const audit = await auditTenant(context.services, scenario.tenant, tally.calls);
  const unsettled = tally.calls
    .filter((call) => call.outcome !== 'executed' && call.outcome !== 'replayed')
    .map((call) => `${call.tool} ${call.key}: ${call.outcome} (${call.reason})`);
  const otherServerErrors = tally.unexpectedServerErrors();
  const outcomes = tally.outcomes();
  return {
    name: scenario.name,
    calls: tally.calls.length,
    requests: tally.attempts,
    lost: tally.networkErrors,
    retries: tally.retries,
    outcomes,
    doubleEffects: audit.doubleEffects.length,
    unavailable: tally.serverErrors.length - otherServerErrors.length,
    otherServerErrors: otherServerErrors.length,
    durationMs,
    notes: [
      `tables: ${audit.counted.invoices} invoices, ${audit.counted.movements} ledger movements, ` +
        `${audit.counted.tickets} tickets, ${audit.counted.messages} outbox messages`,
      ...(proxy
        ? [
            `the proxy lost ${proxy.requests.filter((request) => request.lost).length} of ${proxy.requests.length} answers on purpose`,
          ]
        : []),
      ...(scenario.notes ?? []),
    ],
    violations: [
      ...(scenario.violations ?? []),
      ...capped('not settled', unsettled),
      ...capped('double effect', audit.doubleEffects),
      ...capped('disagreement', audit.disagreements),
      ...capped('unfinished', audit.unfinished),
      ...capped(
        'server error',
        otherServerErrors.map((error) => `HTTP ${error.status} ${error.code ?? '(no code)'}`),
      ),
    ],
  };
}
