import { TOOL_NAMES, type ToolAnswer, type ToolName } from './approaches';
import { currentClock } from './clock';

/**
 * What models and agent loops do with a tool call, as the scripted model plays it (no network):
 * - `keeps_key`: retries a call that did not succeed with the same key and arguments;
 * - `new_key`: loses the observation (a truncated or summarised context) and calls again in its next turn
 *   with a new key (a new UUID per turn), then keeps minting one per retry;
 * - `changed_args`: calls again in its next turn under the same key with the arguments changed (the
 *   amount in dollars, not cents; the body or subject reworded), then goes back to the first ones;
 * - `twice_in_one_turn`: asks for the same call twice in one turn (two parallel tool calls, two keys),
 *   then retries each with its key.
 */
export const BEHAVIOURS = ['keeps_key', 'new_key', 'changed_args', 'twice_in_one_turn'] as const;
export type Behaviour = (typeof BEHAVIOURS)[number];

/** Model turns a run may take, the final answer's included (OpenAI Agents JS's default `maxTurns`). */
export const MAX_MODEL_TURNS = 10;
/** Simulated time one model turn takes. */
export const MODEL_TURN_MS = 2_000;
/**
 * Retries the model makes of one call that keeps failing before it gives up on it and tells the user:
 * models retry an erroring tool a few times, not until the loop's turn limit.
 */
export const MAX_RETRIES_PER_CALL = 3;

/** One intent: what the agent wants done once, and how its model behaves. Fixed by (seed, index). */
export interface IntentPlan {
  readonly index: number;
  readonly tool: ToolName;
  readonly behaviour: Behaviour;
  /** store_throttling: which DynamoDB request after the effect is throttled. */
  readonly throttleAt: 1 | 2;
  readonly args: Readonly<Record<string, string | number>>;
  readonly changedArgs: Readonly<Record<string, string | number>>;
}

/** The invoice every refund intent refunds (one per intent, each intent in a tenant of its own). */
export const INVOICE = { invoice_id: 'inv_1', amount: 4_200, currency: 'usd' } as const;

/** A small seeded generator (mulberry32): the same seed, the same draws, on every machine. */
function generator(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
}

/**
 * The intents of every row: the same list, whatever the approach, runtime or fault. Each block of twelve
 * holds every tool × behaviour once, in an order the seed shuffles; the seed also picks each intent's
 * throttled request.
 */
export function planIntents(seed: number, count: number): IntentPlan[] {
  const draw = generator(seed);
  const combos = TOOL_NAMES.flatMap((tool) => BEHAVIOURS.map((behaviour) => ({ tool, behaviour })));
  const plans: IntentPlan[] = [];
  while (plans.length < count) {
    const block = [...combos];
    for (let n = block.length - 1; n > 0; n--) {
      const other = Math.floor(draw() * (n + 1));
      [block[n], block[other]] = [block[other]!, block[n]!];
    }
    for (const { tool, behaviour } of block.slice(0, count - plans.length)) {
      const index = plans.length;
      const throttleAt = draw() < 0.5 ? 1 : 2;
      plans.push({ index, tool, behaviour, throttleAt, ...argsOf(tool, index) });
    }
  }
  return plans;
}

function argsOf(tool: ToolName, index: number): Pick<IntentPlan, 'args' | 'changedArgs'> {
  switch (tool) {
    case 'refund':
      return {
        args: { invoice_id: INVOICE.invoice_id, amount: INVOICE.amount },
        changedArgs: { invoice_id: INVOICE.invoice_id, amount: INVOICE.amount / 100 },
      };
    case 'create_ticket': {
      const title = `Printer on fire, case ${index}`;
      return {
        args: { title, body: 'The printer on floor 3 is on fire.' },
        changedArgs: { title, body: 'The third-floor printer is on fire.' },
      };
    }
    case 'send_email': {
      const message = { to: `customer${index}@example.com`, body: 'Your refund of 42.00 USD is on its way.' };
      return {
        args: { ...message, subject: 'Your refund' },
        changedArgs: { ...message, subject: 'Your refund is on its way' },
      };
    }
  }
}

/** A tool call the model asks for. */
export interface ModelCall {
  readonly callId: string;
  readonly name: ToolName;
  readonly args: Readonly<Record<string, string | number>>;
}

/** One call the model made and what it was handed. */
export interface CallRecord extends ModelCall {
  readonly turn: number;
  answer?: ToolAnswer;
}

/** What the model does in one turn: tool calls, or its final answer. */
export type ModelTurn = { readonly calls: readonly ModelCall[] } | { readonly final: FinalAnswer };

/**
 * What the model tells the user: it was done; it is still in progress (its last answers said `pending`);
 * it failed (its last answers were errors).
 */
export type FinalAnswer = 'done' | 'in_progress' | 'failed';

interface Slot {
  key: string;
  args: Readonly<Record<string, string | number>>;
  last?: CallRecord;
  reissues: number;
}

/**
 * The scripted model of one intent: each turn it reads what its last calls were handed (the runtime
 * passes it what the framework put in front of it), then asks for calls or answers. It stops when every
 * call it has in mind succeeded, or at its last turn. Each turn moves the intent's clock by a model turn.
 */
export class ScriptedModel {
  turns = 0;
  readonly calls: CallRecord[] = [];
  final?: FinalAnswer;
  #slots: Slot[] = [];
  #keys = 0;
  /** Told the order of each turn's calls, before the framework runs them. */
  onTurn: (calls: readonly ModelCall[]) => void = () => undefined;

  constructor(readonly plan: IntentPlan) {}

  #newKey(): string {
    return `key-${this.plan.index}-${++this.#keys}`;
  }

  /** The next turn, given the text each call id was handed (what the framework's next request carries). */
  next(handed: ReadonlyMap<string, string>): ModelTurn {
    this.turns += 1;
    currentClock()?.advance(MODEL_TURN_MS);
    for (const call of this.calls) {
      if (call.answer === undefined && handed.has(call.callId)) call.answer = answerIn(handed.get(call.callId)!);
    }
    if (this.turns === 1) {
      const count = this.plan.behaviour === 'twice_in_one_turn' ? 2 : 1;
      this.#slots = Array.from({ length: count }, () => ({ key: this.#newKey(), args: this.plan.args, reissues: 0 }));
      return this.#issue(this.#slots);
    }
    const ok = (slot: Slot) => slot.last?.answer?.ok === true;
    const forced = this.turns === 2 && (this.plan.behaviour === 'new_key' || this.plan.behaviour === 'changed_args');
    const again = forced
      ? this.#slots.slice(0, 1)
      : this.#slots.filter((slot) => !ok(slot) && slot.reissues < MAX_RETRIES_PER_CALL + this.#forcedReissues);
    if (again.length === 0 || this.turns >= MAX_MODEL_TURNS) {
      const failed = this.#slots.filter((slot) => !ok(slot));
      const pending = (slot: Slot) => slot.last?.answer?.status === 'pending';
      this.final = failed.length === 0 ? 'done' : failed.every(pending) ? 'in_progress' : 'failed';
      return { final: this.final };
    }
    for (const slot of again) {
      slot.reissues += 1;
      if (this.plan.behaviour === 'new_key') slot.key = this.#newKey();
      if (this.plan.behaviour === 'changed_args')
        slot.args = slot.reissues === 1 ? this.plan.changedArgs : this.plan.args;
    }
    return this.#issue(again);
  }

  /** The re-issue of a lost observation (new_key, changed_args) is not a retry of a failure. */
  get #forcedReissues(): number {
    return this.plan.behaviour === 'new_key' || this.plan.behaviour === 'changed_args' ? 1 : 0;
  }

  #issue(slots: readonly Slot[]): ModelTurn {
    const calls = slots.map((slot, n) => {
      const call: CallRecord = {
        callId: `call_${this.turns}_${n}`,
        name: this.plan.tool,
        args: { idempotency_key: slot.key, ...slot.args },
        turn: this.turns,
      };
      slot.last = call;
      this.calls.push(call);
      return call;
    });
    this.onTurn(calls);
    return { calls };
  }
}

/** The answer object in what a tool handed the model (the JSON text the harness's tools return). */
function answerIn(text: string): ToolAnswer {
  try {
    const parsed = JSON.parse(text) as ToolAnswer;
    if (typeof parsed === 'object' && parsed !== null && 'ok' in parsed) return parsed;
  } catch {
    // not JSON: a framework's own error text
  }
  return { ok: false, error: { code: 'unreadable', message: text } };
}
