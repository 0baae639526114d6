import type { Context } from 'aws-lambda';
import type { IntentPlan, ModelCall } from './agent';
import type { ToolAnswer, ToolRequest, ToolServer } from './approaches';
import type { SimulatedClock } from './clock';
import {
  type Attempt,
  asAttempt,
  CLIENT_TIMEOUT_MS,
  type Fault,
  FUNCTION_TIMEOUT_MS,
  RETRY_AFTER_TTL_MS,
} from './faults';

interface Deferred<T = void> {
  readonly promise: Promise<T>;
  resolve(value: T): void;
}

function deferred<T = void>(): Deferred<T> {
  let resolve!: (value: T) => void;
  const promise = new Promise<T>((done) => {
    resolve = done;
  });
  return { promise, resolve };
}

type Outcome = { readonly answer: ToolAnswer } | { readonly died: 'killed' | 'timed_out' };

/** One worker serving one request. */
interface Started {
  /** Its answer, or its death. */
  readonly settled: Promise<Outcome>;
  /** Once it parked before its effect, or settled: the next request may go. */
  readonly yielded: Promise<void>;
  readonly parked: () => boolean;
  release(): void;
}

const ANSWERS = {
  lost: { ok: false, error: { code: 'network', message: 'socket hang up: the connection closed before any answer' } },
  timeout: { ok: false, error: { code: 'timeout', message: '504 Gateway Timeout' } },
  died: { ok: false, error: { code: 'bad_gateway', message: '502 Bad Gateway: the function exited' } },
} as const satisfies Record<string, ToolAnswer>;

/**
 * Between one intent's agent and the tool's functions: each call the framework runs becomes a worker
 * serving it, and the row's fault is applied to the first. Workers of one intent run one at a time, in
 * an order the harness fixes: a turn's calls in the model's order, each admitted once the one before it
 * finished or parked before its effect; a parked worker goes on when the next call is answered, before
 * that answer is handed back. So two calls "at once" overlap exactly at the effect, every time.
 */
export class IntentTransport {
  /** Requests the agent sent (its round trips). */
  roundTrips = 0;
  #order: string[] = [];
  readonly #admitted = new Map<string, Deferred>();
  #held: Started[] = [];

  constructor(
    private readonly server: ToolServer,
    private readonly fault: Fault,
    private readonly plan: IntentPlan,
    private readonly clock: SimulatedClock,
    private readonly caller: { readonly tenant: string; readonly user: string },
  ) {}

  /** The model's calls of a turn, in its order (told before the framework runs them). */
  beginTurn(calls: readonly ModelCall[]): void {
    this.#order = calls.map((call) => call.callId);
    for (const call of calls) this.#admitted.set(call.callId, deferred());
  }

  /** One tool call as the framework runs it: what the tool hands back to the framework. */
  async call(callId: string, tool: ToolRequest['tool'], input: Readonly<Record<string, unknown>>): Promise<ToolAnswer> {
    const place = this.#order.indexOf(callId);
    if (place > 0) await this.#admitted.get(this.#order[place - 1]!)!.promise;
    const first = this.roundTrips++ === 0;
    const { idempotency_key: key, ...args } = input;
    const request: ToolRequest = { tool, ...this.caller, key: String(key), args };
    const fault = first ? this.fault : undefined;
    const pairFirst = first && this.#order.length > 1;
    const worker = this.#start(request, {
      hold: pairFirst || fault === 'gateway_timeout' || fault === 'concurrent_duplicates',
      kill: fault === 'worker_killed',
      ...(fault === 'store_throttling' ? { throttleAt: this.plan.throttleAt } : {}),
    });
    await worker.yielded;
    const admitted = this.#admitted.get(callId);

    if (worker.parked() && fault === 'concurrent_duplicates') {
      // The same request again while the first copy is held before its effect: the client gets this copy's
      // answer. The turn's next call waits for both copies.
      const copy = this.#start(request, { hold: false, kill: false });
      const answered = await copy.settled;
      worker.release();
      await worker.settled;
      admitted?.resolve();
      await this.#releaseHeld();
      return this.#handed(answered, fault);
    }
    if (worker.parked() && fault === 'gateway_timeout') {
      // The client gives up; the worker goes on once the agent's next call is answered.
      this.#held.push(worker);
      this.clock.advance(CLIENT_TIMEOUT_MS);
      admitted?.resolve();
      return ANSWERS.timeout;
    }
    if (worker.parked()) {
      // The first of two calls in one turn: held before its effect until the second is answered.
      this.#held.push(worker);
      admitted?.resolve();
      return this.#handed(await worker.settled, fault);
    }
    admitted?.resolve();
    const outcome = await worker.settled;
    await this.#releaseHeld();
    return this.#handed(outcome, fault);
  }

  /** Lets every held worker go on, and waits for each to end: at each answer, and once the agent is done. */
  async #releaseHeld(): Promise<void> {
    while (this.#held.length > 0) {
      const worker = this.#held.shift()!;
      worker.release();
      await worker.settled;
    }
  }

  /** Once the agent gave its final answer: every worker still held goes on to its end. */
  settle(): Promise<void> {
    return this.#releaseHeld();
  }

  #handed(outcome: Outcome, fault: Fault | undefined): ToolAnswer {
    if ('died' in outcome) return outcome.died === 'killed' ? ANSWERS.died : ANSWERS.timeout;
    if (fault === 'lost_response') return ANSWERS.lost;
    if (fault === 'retry_after_ttl') {
      this.clock.advance(RETRY_AFTER_TTL_MS); // the agent comes back the next day
      return ANSWERS.lost;
    }
    return outcome.answer;
  }

  #start(request: ToolRequest, options: { hold: boolean; kill: boolean; throttleAt?: number }): Started {
    const parked = deferred();
    const released = deferred();
    const died = deferred<'killed' | 'timed_out'>();
    let isParked = false;
    const attempt: Attempt = {
      deadlineMs: Date.now() + FUNCTION_TIMEOUT_MS,
      ...(options.hold
        ? {
            async beforeEffect() {
              isParked = true;
              parked.resolve();
              await released.promise;
              isParked = false;
            },
          }
        : {}),
      killAfterEffect: options.kill,
      ...(options.throttleAt === undefined ? {} : { throttleAfterEffect: options.throttleAt }),
      effectDone: false,
      requestsAfterEffect: 0,
      onDeath: (why) => died.resolve(why),
    };
    const served = asAttempt(attempt, () => this.server(request, lambdaContext(attempt.deadlineMs))).then(
      (answer): Outcome => ({ answer }),
      (error: unknown): Outcome => ({
        answer: { ok: false, error: { code: 'internal', message: `uncaught ${(error as Error)?.name}` } },
      }),
    );
    const settled = Promise.race([served, died.promise.then((why): Outcome => ({ died: why }))]);
    return {
      settled,
      yielded: Promise.race([parked.promise, settled.then(() => undefined)]),
      parked: () => isParked,
      release: () => released.resolve(),
    };
  }
}

/** A Lambda context whose remaining time counts down on the intent's simulated clock. */
function lambdaContext(deadlineMs: number): Context {
  return {
    functionName: 'tool',
    functionVersion: '$LATEST',
    invokedFunctionArn: 'arn:aws:lambda:us-east-1:000000000000:function:tool',
    memoryLimitInMB: '512',
    awsRequestId: 'bench',
    logGroupName: '/aws/lambda/tool',
    logStreamName: 'bench',
    callbackWaitsForEmptyEventLoop: true,
    getRemainingTimeInMillis: () => deadlineMs - Date.now(),
    done: () => undefined,
    fail: () => undefined,
    succeed: () => undefined,
  };
}
