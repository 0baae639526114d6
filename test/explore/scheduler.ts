import { AsyncLocalStorage } from 'node:async_hooks';
import { ProvisionedThroughputExceededException } from '@aws-sdk/client-dynamodb';
import { unsafeUniformIntDistribution, xoroshiro128plus } from 'pure-rand';

/**
 * A deterministic scheduler in the manner of FoundationDB's simulator and TigerBeetle's VOPR: actors
 * (agents, the completer, erase) run real code, and every DynamoDB request they make is a *scheduling
 * point*. Exactly one actor moves at a time; the seeded scheduler chooses which one, and may inject a
 * fault at that exact point. Time is the simulation's clock (`Date.now()` is the scheduler's), so a seed
 * reproduces a run step for step.
 *
 * Interleavings follow PCT (Burckhardt et al., ASPLOS 2010): each actor gets a random priority, the
 * highest-priority ready actor moves, and at `depth - 1` random steps the running actor's priority drops
 * below every other — which finds bugs of small depth with a probability bounded from below.
 */

/** What the scheduler may do to one request. */
export type Fault =
  /** Sent, answered: nothing injected. */
  | 'none'
  /** The actor dies here: the request is never sent and the actor never continues. */
  | 'crash'
  /** The request is applied, then its answer is lost (a timeout): the actor sees a transient error. */
  | 'lose_answer'
  /** The request is applied twice (the SDK retried a lost answer); the actor sees the second answer. */
  | 'duplicate'
  /** A transient failure before the request is applied (a 5xx, a reset connection). */
  | 'fail_before'
  /** Throttled before it is applied. */
  | 'throttle'
  /** The actor stalls here past every lock (a GC pause, a frozen container), then sends the request. */
  | 'hold'
  /**
   * The actor stalls here past every lock while the others move, and sends the request only once they
   * are done or waiting (a slow effect: the lock ends under it). Scripted by a scenario, never random.
   */
  | 'stall';

export const FAULTS: readonly Exclude<Fault, 'none'>[] = [
  'crash',
  'lose_answer',
  'duplicate',
  'fail_before',
  'throttle',
  'hold',
];

/** One line of a schedule's trace: what moved, and what was done to it. */
export interface TraceLine {
  readonly step: number;
  readonly actor: string;
  readonly request: string;
  readonly fault: Fault;
  /** Simulated time, ms since the schedule's start. */
  readonly at: number;
}

interface Actor {
  readonly name: string;
  priority: number;
  crashed: boolean;
  done: boolean;
  readonly options: SpawnOptions;
  /** Requests of this actor chosen so far (scripted faults count them). */
  requests: number;
}

/** How an actor takes part in a schedule (every option defaults to an ordinary actor). */
export interface SpawnOptions {
  /**
   * Moves only when no ordinary actor is ready (it starts once the others are done, crashed or
   * stalled): a caller or completer coming back long after.
   * @default false
   */
  readonly late?: boolean;
  /** Its priority is drawn again after each of its steps: its requests fall anywhere among the others'. @default false */
  readonly shuffled?: boolean;
  /** Moves only from this step on (unless nothing else is ready). @default 0 */
  readonly fromStep?: number;
  /** Its clock's offset from the simulation's, ms: `Date.now()` reads the clock plus it inside the actor. @default 0 */
  readonly clockOffsetMs?: number;
}

/** A fault a scenario scripts: at the `nth` request (1-based) its actor makes. */
export interface ScriptedFault {
  readonly actor: string;
  readonly nth: number;
  readonly fault: 'crash' | 'hold' | 'stall';
}

interface Point {
  readonly actor: Actor;
  readonly request: string;
  /** A stalled request parked again: not a request of its own. */
  readonly stalled?: boolean;
  /** A wait until this simulated time: waits end in the order of their times, as timers fire. */
  readonly wakeAt?: number;
  release(fault: Fault): void;
}

/** What a schedule injects, chosen once from its seed. */
export interface FaultPlan {
  /** Probability of a fault at each step. */
  readonly rate: number;
  /** Faults allowed in this schedule. */
  readonly kinds: readonly Exclude<Fault, 'none'>[];
  /** Faults forced at exactly these steps (systematic exploration, a scripted regression), whatever the rate. */
  readonly at?: readonly { readonly step: number; readonly fault: Exclude<Fault, 'none'> }[];
  /** Whether actors crash (a crash ends an actor; scenarios without a completer may forbid it). */
  readonly maxCrashes: number;
}

export interface SchedulerOptions {
  readonly seed: number;
  readonly plan: FaultPlan;
  /** PCT depth: priority change points. @default 3 */
  readonly depth?: number;
  /** Steps after which the run is declared stuck. @default 2_000 */
  readonly maxSteps?: number;
  /** How far a `hold` moves the clock, ms (past every lock). */
  readonly holdMs: number;
  /**
   * Clock jumps the scheduler may make between steps (past a lock, a dedupe window, a record's TTL),
   * ms; each step has a small chance of one.
   * @default [] (none)
   */
  readonly jumps?: readonly number[];
  /** Faults the scenario scripts, whatever the plan (a base schedule has them too). @default [] */
  readonly scripted?: readonly ScriptedFault[];
}

/** The actor a piece of async code runs as (requests outside any actor are not scheduled). */
const running = new AsyncLocalStorage<{ actor: Actor; scheduler: Scheduler }>();

/**
 * The simulation's clock: `Date.now()` reads it while a simulation is installed — inside an actor, plus
 * that actor's own offset (a worker whose clock is skewed).
 */
export class SimClock {
  #now: number;
  readonly start: number;
  constructor(start: number) {
    this.#now = start;
    this.start = start;
  }
  now(): number {
    return this.#now + (running.getStore()?.actor.options.clockOffsetMs ?? 0);
  }
  /** The simulation's own time, whoever asks. */
  get simulated(): number {
    return this.#now;
  }
  advance(ms: number): void {
    this.#now += ms;
  }
}

const RealDate = Date;

/**
 * Makes `Date.now()` and `new Date()` read `clock` until the returned function is called. (`new Date()`
 * too: the tools stamp items with it — `created_at`, `queued_at`, `delivered_at` — and a stamp from the
 * wall clock would differ between two runs of one seed.) Dates from before stay dates: `instanceof Date`
 * holds for every date, whichever constructor made it.
 */
export function installClock(clock: SimClock): () => void {
  class SimulatedDate extends RealDate {
    constructor(...args: ConstructorParameters<typeof Date> | []) {
      if (args.length === 0) super(clock.now());
      else super(...(args as ConstructorParameters<typeof Date>));
    }
    static override now(): number {
      return clock.now();
    }
    static override [Symbol.hasInstance](value: unknown): boolean {
      return value instanceof RealDate;
    }
  }
  globalThis.Date = SimulatedDate as DateConstructor;
  return () => {
    globalThis.Date = RealDate;
  };
}

export class Scheduler {
  readonly trace: TraceLine[] = [];
  readonly clock: SimClock;
  readonly #options: SchedulerOptions;
  readonly #rng: { next(max: number): number; chance(p: number): boolean };
  readonly #actors: Actor[] = [];
  readonly #ready: Point[] = [];
  readonly #changePoints: Set<number>;
  #step = 0;
  #crashes = 0;
  /** The explorer's own reads under way: the schedule waits for them. */
  readonly #observations = new Set<Promise<void>>();
  /** Set while one released request is being sent: nothing else moves. */
  #inFlight: Promise<void> | undefined;

  constructor(options: SchedulerOptions, clock: SimClock) {
    this.#options = options;
    this.clock = clock;
    this.#rng = random(options.seed);
    const depth = options.depth ?? 3;
    this.#changePoints = new Set(Array.from({ length: depth - 1 }, () => this.#rng.next(60)));
  }

  get steps(): number {
    return this.#step;
  }

  /** A random whole number in [0, max), from the schedule's seed (for scenario choices). */
  pick(max: number): number {
    return this.#rng.next(max);
  }

  chance(p: number): boolean {
    return this.#rng.chance(p);
  }

  /** Starts `work` as an actor. Its promise settles when it finishes; it never settles if it crashed. */
  spawn<T>(name: string, work: () => Promise<T>, options: SpawnOptions = {}): Promise<T> {
    const priority = priorityIn(options, this.#rng.next(1_000_000));
    const actor: Actor = { name, priority, crashed: false, done: false, options, requests: 0 };
    this.#actors.push(actor);
    return running.run({ actor, scheduler: this }, async () => {
      try {
        return await work();
      } finally {
        actor.done = true;
      }
    });
  }

  /** Whether the named actor crashed. */
  crashed(name: string): boolean {
    return this.#actors.some((actor) => actor.name === name && actor.crashed);
  }

  /**
   * Runs until every actor has finished or crashed: waits for quiet (every live actor parked at a
   * point), picks one point, injects its fault, lets it go, repeats.
   */
  async run(): Promise<void> {
    for (;;) {
      await quiet();
      if (this.#inFlight) {
        await this.#inFlight;
        continue;
      }
      if (this.#observations.size > 0) {
        const pending = [...this.#observations];
        this.#observations.clear();
        await Promise.all(pending);
        continue;
      }
      const live = this.#ready.filter((point) => !point.actor.crashed);
      this.#ready.length = 0;
      // An actor that starts at a later step waits for it, unless nothing else could move.
      const first = Math.min(...live.map((point) => point.wakeAt ?? Number.POSITIVE_INFINITY));
      const due = live.filter(
        (point) =>
          (point.actor.options.fromStep ?? 0) <= this.#step && (point.wakeAt === undefined || point.wakeAt <= first),
      );
      const ready = due.length > 0 ? due : live;
      for (const point of live) if (!ready.includes(point)) this.#ready.push(point);
      if (ready.length === 0) return;
      if (this.#step >= (this.#options.maxSteps ?? 2_000)) {
        throw new Error(`no quiescence after ${this.#step} steps`);
      }
      const chosen = this.#choose(ready);
      // The others stay parked for a later step.
      for (const point of ready) if (point !== chosen) this.#ready.push(point);
      const jumps = this.#options.jumps ?? [];
      if (jumps.length > 0 && this.#options.plan.kinds.length > 0 && this.#rng.chance(0.02)) {
        const jump = jumps[this.#rng.next(jumps.length)]!;
        this.clock.advance(jump);
        this.trace.push({
          step: this.#step,
          actor: 'clock',
          request: `+${jump} ms`,
          fault: 'none',
          at: this.clock.now() - this.clock.start,
        });
      }
      if (!chosen.stalled) chosen.actor.requests += 1;
      const scripted = chosen.stalled
        ? undefined
        : this.#options.scripted?.find(
            (script) => script.actor === chosen.actor.name && script.nth === chosen.actor.requests,
          );
      const fault = scripted?.fault ?? this.#fault();
      this.trace.push({
        step: this.#step,
        actor: chosen.actor.name,
        request: chosen.request,
        fault,
        at: this.clock.now() - this.clock.start,
      });
      if (this.#changePoints.has(this.#step)) chosen.actor.priority = this.#step - 1_000_000;
      this.#step += 1;
      if (fault === 'crash') {
        chosen.actor.crashed = true;
        this.#crashes += 1;
      }
      if (fault === 'hold' || fault === 'stall') {
        this.clock.advance(this.#options.holdMs);
        chosen.actor.priority = -1_000_000 - this.#step; // the stalled actor moves last for a while
      } else if (chosen.actor.options.shuffled) {
        chosen.actor.priority = priorityIn(chosen.actor.options, this.#rng.next(1_000_000));
      }
      chosen.release(fault);
    }
  }

  /** The highest-priority actor's oldest point. */
  #choose(ready: Point[]): Point {
    let best = ready[0]!;
    for (const point of ready) if (point.actor.priority > best.actor.priority) best = point;
    return best;
  }

  #fault(): Fault {
    const { plan } = this.#options;
    let fault: Fault = 'none';
    if (plan.at) {
      fault = plan.at.find((forced) => forced.step === this.#step)?.fault ?? 'none';
    } else if (plan.kinds.length > 0 && this.#rng.chance(plan.rate)) {
      fault = plan.kinds[this.#rng.next(plan.kinds.length)]!;
    }
    if (fault === 'crash' && this.#crashes >= plan.maxCrashes) return 'none';
    return fault;
  }

  /**
   * A scheduling point: parks the current actor until the scheduler releases it, then sends `send`
   * (or not) as the chosen fault says. Called by the DynamoDB middleware for every request.
   */
  async point<T>(actor: Actor, request: string, send: () => Promise<T>): Promise<T> {
    const fault = await new Promise<Fault>((release) => {
      this.#ready.push({ actor, request, release });
    });
    if (fault === 'crash') return new Promise<never>(() => {}); // never continues
    if (fault === 'stall') {
      // Parked again, unsent, at the lowest priority: it goes once every other actor is done or waiting.
      const then = await new Promise<Fault>((release) => {
        this.#ready.push({ actor, request: `${request} (stalled)`, stalled: true, release });
      });
      if (then === 'crash') return new Promise<never>(() => {});
      return this.#send(then === 'stall' ? 'none' : then, send);
    }
    return this.#send(fault, send);
  }

  /** Sends a released request as `fault` says; nothing else moves until it is answered. */
  async #send<T>(fault: Fault, send: () => Promise<T>): Promise<T> {
    let finished!: () => void;
    this.#inFlight = new Promise<void>((resolve) => {
      finished = resolve;
    });
    try {
      switch (fault) {
        case 'fail_before':
          throw networkError('ECONNRESET');
        case 'throttle':
          throw new ProvisionedThroughputExceededException({ message: 'throttled (simulated)', $metadata: {} });
        case 'lose_answer':
          await send().catch(() => undefined);
          throw networkError('TimeoutError');
        case 'duplicate':
          await send().catch(() => undefined);
          return await send();
        default:
          return await send();
      }
    } finally {
      this.#inFlight = undefined;
      finished();
    }
  }

  /**
   * Runs `work` outside every actor — its requests are not scheduling points (the explorer's own reads,
   * an atomic observation) — and holds the schedule until it is done, so its I/O never races a step.
   */
  static observe<T>(work: () => Promise<T>): Promise<T> {
    const scheduler = running.getStore()?.scheduler;
    const observation = running.exit(work);
    if (scheduler)
      scheduler.#observations.add(
        observation.then(
          () => undefined,
          () => undefined,
        ),
      );
    return observation;
  }

  /** A scheduled step of the current actor that only moves the clock `ms` ahead (it waited that long). */
  async wait(ms: number): Promise<void> {
    const running = Scheduler.current();
    if (!running) throw new Error('wait() outside an actor');
    // A fault injected here is only a delay (a crash still ends the actor).
    await this.point(running.actor, `wait +${ms} ms`, async () => this.clock.advance(ms)).catch(() => undefined);
  }

  /**
   * A scheduled step of the current actor that moves the clock to `atMs` (simulated) — or not at all if
   * that time has passed. Such waits end in the order of their times (a later one waits for an earlier).
   */
  async waitUntil(atMs: number, label: string): Promise<void> {
    const running = Scheduler.current();
    if (!running) throw new Error('waitUntil() outside an actor');
    const fault = await new Promise<Fault>((release) => {
      this.#ready.push({ actor: running.actor, request: `wait until ${label}`, wakeAt: atMs, release });
    });
    if (fault === 'crash') return new Promise<never>(() => {});
    // Any other fault injected here is only a delay.
    this.clock.advance(Math.max(0, atMs - this.clock.simulated));
  }

  /** The current actor, if the caller runs inside one of this scheduler's actors. */
  static current(): { actor: Actor; scheduler: Scheduler } | undefined {
    return running.getStore();
  }
}

/**
 * An actor's priority from a draw in [0, 1e6): ordinary actors above every late one, late ones above
 * every actor PCT demoted or a stall put last.
 */
function priorityIn(options: SpawnOptions, draw: number): number {
  return options.late ? -500_000 + Math.floor(draw / 10) - 100_000 : draw + 10;
}

/** Lets every microtask and pending callback run, so each live actor reaches its next point. */
async function quiet(): Promise<void> {
  for (let i = 0; i < 3; i++) await new Promise<void>((resolve) => setImmediate(resolve));
}

/** An error as Node's HTTP stack raises it: transient for the SDK's classification. */
function networkError(kind: 'ECONNRESET' | 'TimeoutError'): Error {
  if (kind === 'TimeoutError') {
    return Object.assign(new Error('the answer was lost (simulated)'), { name: 'TimeoutError' });
  }
  return Object.assign(new Error('socket hang up (simulated)'), { code: 'ECONNRESET' });
}

function random(seed: number) {
  const generator = xoroshiro128plus(seed);
  return {
    next(max: number): number {
      return max <= 1 ? 0 : unsafeUniformIntDistribution(0, max - 1, generator);
    },
    chance(p: number): boolean {
      return p > 0 && unsafeUniformIntDistribution(0, 999_999, generator) < p * 1_000_000;
    },
  };
}
