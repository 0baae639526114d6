import {
  type FetchLike,
  GaveUpError,
  type JsonObject,
  RetrysafeClient,
  ToolCallError,
  UnexpectedAnswerError,
} from '../../lib/client';

/** How one intent's call ended, as its caller saw it. */
export type CallOutcome = 'executed' | 'replayed' | 'refused' | 'gave_up' | 'unexpected';

/** One call of a tool through the retrying client: what was asked, and how it settled. */
export interface CallRecord {
  readonly tool: string;
  readonly key: string;
  readonly args: JsonObject;
  readonly outcome: CallOutcome;
  /** The receipt of a settled call (first execution or replay). */
  readonly receipt?: JsonObject;
  /** Why a call did not settle: the error code, or what the client gave up on. */
  readonly reason?: string;
}

/** An answer of 500 or more, when it came and what it said. */
export interface ServerError {
  readonly status: number;
  readonly code: string | undefined;
  readonly at: number;
}

/**
 * What one scenario's client sent and got back: every HTTP attempt (counted in the client's `fetch`,
 * so retries are seen as the server sees them), every answer of 500 or more, and every call's outcome.
 */
export class Tally {
  /** HTTP requests sent, retries included. */
  attempts = 0;
  /** Requests whose answer never arrived (a lost answer, a refused connection, a reset). */
  networkErrors = 0;
  readonly serverErrors: ServerError[] = [];
  /** When each answer arrived (epoch ms), whatever its status. */
  readonly answeredAt: number[] = [];
  readonly calls: CallRecord[] = [];
  /** Calls started and not settled yet. */
  inFlight = 0;

  /** The `fetch` the scenario's client sends with: the global one, counted. */
  readonly fetch: FetchLike = async (url, init) => {
    this.attempts += 1;
    let response: Response;
    try {
      response = await fetch(url, init);
    } catch (error) {
      this.networkErrors += 1;
      throw error;
    }
    const at = Date.now();
    this.answeredAt.push(at);
    if (response.status >= 500) {
      const code = await response
        .clone()
        .json()
        .then((body: unknown) => (body as { error?: { code?: string } } | null)?.error?.code)
        .catch(() => undefined);
      this.serverErrors.push({ status: response.status, code, at });
    }
    return response;
  };

  /** Calls beyond the first per intent: the retries the client made. */
  get retries(): number {
    return Math.max(0, this.attempts - this.calls.length - this.inFlight);
  }

  /** How many calls ended each way. */
  outcomes(): Record<CallOutcome, number> {
    const counts: Record<CallOutcome, number> = { executed: 0, replayed: 0, refused: 0, gave_up: 0, unexpected: 0 };
    for (const call of this.calls) counts[call.outcome] += 1;
    return counts;
  }

  /** Answers of 500 or more other than 503 `unavailable`: each one is a violation. */
  unexpectedServerErrors(): ServerError[] {
    return this.serverErrors.filter((error) => error.status !== 503 || error.code !== 'unavailable');
  }
}

/** The retrying client of one scenario, and the tally of everything it does. */
export class ChaosCaller {
  readonly tally = new Tally();
  readonly #client: RetrysafeClient;

  constructor(
    baseUrl: string,
    token: string,
    /** Long enough to outlast an outage, a restart and an expired lock. */
    deadlineMs = 60_000,
  ) {
    this.#client = new RetrysafeClient({ baseUrl, token, fetch: this.tally.fetch, deadlineMs });
  }

  /** Calls `tool` with `key` until it settles, and records how it ended (it never throws). */
  async call(tool: string, key: string, args: JsonObject): Promise<CallRecord> {
    this.tally.inFlight += 1;
    let record: CallRecord;
    try {
      const answer = await this.#client.call(tool, args, { key });
      record = { tool, key, args, outcome: answer.idempotent ? 'replayed' : 'executed', receipt: answer.receipt };
    } catch (error) {
      if (error instanceof ToolCallError) record = { tool, key, args, outcome: 'refused', reason: error.message };
      else if (error instanceof GaveUpError) record = { tool, key, args, outcome: 'gave_up', reason: error.message };
      else if (error instanceof UnexpectedAnswerError)
        record = { tool, key, args, outcome: 'unexpected', reason: error.message };
      else record = { tool, key, args, outcome: 'unexpected', reason: String(error) };
    } finally {
      this.tally.inFlight -= 1;
    }
    this.tally.calls.push(record);
    return record;
  }
}

/** Runs `work` on every item, at most `limit` at a time, and resolves with the results in order. */
export async function inBatches<T, R>(items: readonly T[], limit: number, work: (item: T) => Promise<R>): Promise<R[]> {
  const results: R[] = new Array(items.length);
  let next = 0;
  async function worker(): Promise<void> {
    while (next < items.length) {
      const index = next++;
      results[index] = await work(items[index] as T);
    }
  }
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  return results;
}
