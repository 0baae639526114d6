import { INVOICE, type IntentPlan, ScriptedModel } from './agent';
import type { Approach, ToolName } from './approaches';
import { onClock, SimulatedClock } from './clock';
import { servedOver } from './entries';
import type { Fault } from './faults';
import { type Runtime, runIntent, SURFACES } from './runtimes';
import { IntentTransport } from './transport';
import type { BenchWorld, TenantWorld } from './world';

/** One row of the table: one approach, driven by one runtime, under one fault. Counts are intents. */
export interface Row {
  readonly approach: Approach;
  readonly runtime: Runtime;
  readonly fault: Fault;
  readonly intents: number;
  /** Intents whose effect the world holds more than once (ledger rows, tickets, delivered emails). */
  readonly doubled: number;
  /** Intents left half done: money moved and the invoice not marked; an email queued and never delivered. */
  readonly half_done: number;
  /** Intents where a call was answered ok with arguments no effect in the world has (a reused key's old result). */
  readonly wrong_amount: number;
  /** Intents whose model answered "failed" while the world holds the effect. */
  readonly false_failure: number;
  readonly turns_per_intent: number;
  readonly round_trips_per_intent: number;
  /** Simulated seconds from the first model turn to the final answer. */
  readonly p50_s: number;
  readonly p99_s: number;
}

/** One intent as it went: for the trace of a row that breaks a promise. */
export interface IntentTrace {
  readonly plan: IntentPlan;
  readonly tenant: string;
  readonly final: string | undefined;
  readonly calls: ReadonlyArray<{ turn: number; args: unknown; answer: unknown }>;
  readonly world: TenantWorld;
  readonly verdict: Verdict;
}

interface Verdict {
  readonly effects: number;
  readonly doubled: boolean;
  readonly halfDone: boolean;
  readonly wrongArgs: boolean;
  readonly falseFailure: boolean;
}

/**
 * When every intent starts, on its own clock: fixed, so a run's records are the same from run to run —
 * and in the future, because DynamoDB Local's TTL sweeper deletes, on the machine's own clock, items whose
 * TTL is past: records written in a simulated past would vanish at moments of its choosing.
 */
export const START_MS = Date.UTC(2035, 0, 1, 9, 0, 0);

/** At most `limit` pieces of work at a time, over every row that shares it. */
export class Lanes {
  #free: number;
  readonly #waiting: Array<() => void> = [];

  constructor(limit: number) {
    this.#free = limit;
  }

  async run<T>(work: () => Promise<T>): Promise<T> {
    if (this.#free > 0) this.#free -= 1;
    else await new Promise<void>((resolve) => this.#waiting.push(resolve));
    try {
      return await work();
    } finally {
      const next = this.#waiting.shift();
      if (next) next();
      else this.#free += 1;
    }
  }
}

/** A row's intents, run: what its tally reads. */
export interface DrivenRow {
  readonly key: RowKey;
  readonly intents: ReadonlyArray<{
    readonly plan: IntentPlan;
    readonly tenant: string;
    readonly model: ScriptedModel;
    readonly transport: IntentTransport;
    readonly answeredMs: number;
    readonly endMs: number;
  }>;
}

export interface RowKey {
  readonly approach: Approach;
  readonly runtime: Runtime;
  readonly fault: Fault;
  /** Its place in the run: its tenants are `r<row>-i<intent>`. */
  readonly row: number;
}

/**
 * One row's intents, each in a tenant of its own on a clock of its own: its agent run to its final
 * answer under the row's fault, then every worker it left held finished. Intents are independent (their
 * own tenant, keys and clock), so how many run at once (`lanes`) changes no count.
 */
export async function driveRow(
  world: BenchWorld,
  key: RowKey,
  plans: readonly IntentPlan[],
  lanes: Lanes,
): Promise<DrivenRow> {
  const server = servedOver(SURFACES[key.runtime], key.approach, world);
  const intents = await Promise.all(
    plans.map((plan) =>
      lanes.run(async () => {
        const tenant = `r${key.row}-i${plan.index}`;
        if (plan.tool === 'refund') {
          await world.domain.invoices.create({
            tenant,
            ...INVOICE,
            customer: `cus_${plan.index}`,
            created_at: new Date(START_MS).toISOString(),
          });
        }
        const clock = new SimulatedClock(START_MS);
        const model = new ScriptedModel(plan);
        const transport = new IntentTransport(server, key.fault, plan, clock, { tenant, user: 'agent' });
        let answeredMs = START_MS;
        await onClock(clock, async () => {
          await runIntent(key.runtime, model, transport);
          answeredMs = clock.nowMs;
          await transport.settle();
        });
        return { plan, tenant, model, transport, answeredMs, endMs: clock.nowMs };
      }),
    ),
  );
  return { key, intents };
}

/** Each intent's tenant judged from the tables (read once the completer settled), and the row's counts. */
export function tallyRow(
  worlds: ReadonlyMap<string, TenantWorld>,
  driven: DrivenRow,
): { row: Row; traces: IntentTrace[] } {
  const { key, intents } = driven;
  const traces: IntentTrace[] = [];
  const nothing: TenantWorld = { movements: [], invoices: [], tickets: [], messages: [] };
  for (const intent of intents) {
    const tenantWorld = worlds.get(intent.tenant) ?? nothing;
    traces.push({
      plan: intent.plan,
      tenant: intent.tenant,
      final: intent.model.final,
      calls: intent.model.calls.map((call) => ({ turn: call.turn, args: call.args, answer: call.answer })),
      world: tenantWorld,
      verdict: judge(intent.plan.tool, intent.model, tenantWorld),
    });
  }
  const count = (test: (verdict: Verdict) => boolean) => traces.filter((trace) => test(trace.verdict)).length;
  const seconds = intents.map((intent) => (intent.answeredMs - START_MS) / 1000).sort((a, b) => a - b);
  const mean = (values: number[]) => round(values.reduce((sum, value) => sum + value, 0) / Math.max(1, values.length));
  return {
    row: {
      approach: key.approach,
      runtime: key.runtime,
      fault: key.fault,
      intents: intents.length,
      doubled: count((verdict) => verdict.doubled),
      half_done: count((verdict) => verdict.halfDone),
      wrong_amount: count((verdict) => verdict.wrongArgs),
      false_failure: count((verdict) => verdict.falseFailure),
      turns_per_intent: mean(intents.map((intent) => intent.model.turns)),
      round_trips_per_intent: mean(intents.map((intent) => intent.transport.roundTrips)),
      p50_s: quantile(seconds, 0.5),
      p99_s: quantile(seconds, 0.99),
    },
    traces,
  };
}

function round(value: number): number {
  return Math.round(value * 100) / 100;
}

/** The nearest-rank quantile of sorted values. */
function quantile(sorted: readonly number[], q: number): number {
  if (sorted.length === 0) return 0;
  return sorted[Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1)]!;
}

/** Judges one intent from its tenant's tables — and, for what the model was told, its calls' answers. */
export function judge(tool: ToolName, model: ScriptedModel, world: TenantWorld): Verdict {
  const okCalls = model.calls.filter((call) => call.answer?.ok === true);
  let effects: number;
  let halfDone: boolean;
  let matches: (args: Readonly<Record<string, unknown>>) => boolean;
  switch (tool) {
    case 'refund': {
      effects = world.movements.length;
      halfDone = effects > 0 && !world.invoices.some((invoice) => invoice.refund !== undefined);
      matches = (args) => world.movements.some((movement) => movement.amount === args.amount);
      break;
    }
    case 'create_ticket': {
      effects = world.tickets.length;
      halfDone = false; // one write: nothing to leave half done
      matches = (args) => world.tickets.some((ticket) => ticket.title === args.title && ticket.body === args.body);
      break;
    }
    case 'send_email': {
      const delivered = world.messages.filter((message) => message.status === 'delivered');
      effects = delivered.length;
      halfDone = world.messages.some((message) => message.status === 'queued');
      matches = (args) =>
        delivered.some(
          (message) => message.to === args.to && message.subject === args.subject && message.body === args.body,
        );
      break;
    }
  }
  return {
    effects,
    doubled: effects > 1,
    halfDone,
    wrongArgs: okCalls.some((call) => !matches(call.args)),
    falseFailure: model.final === 'failed' && effects > 0,
  };
}
