import { AsyncLocalStorage } from 'node:async_hooks';
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';

/**
 * The faults of the benchmark (docs/benchmark.md says what each does), each injected at a seam the harness owns — never by a timer or a race:
 * the transport between the agent and the tool (a lost answer, a client timeout, a duplicate delivery),
 * the tool's one effect (a worker killed just after the provider accepted), and the DynamoDB client
 * (a throttled request). Every approach is served over the same seams.
 */
export const FAULTS = [
  'lost_response',
  'gateway_timeout',
  'worker_killed',
  'concurrent_duplicates',
  'store_throttling',
  'retry_after_ttl',
] as const;
export type Fault = (typeof FAULTS)[number];

/** How long the agent's HTTP client waits for a tool's answer before it gives up (gateway_timeout). */
export const CLIENT_TIMEOUT_MS = 5_000;
/** The tool functions' timeout (the stack's `INVOCATION_TIMEOUT_SECONDS`): past it the worker is gone. */
export const FUNCTION_TIMEOUT_MS = 10_000;
/** When the agent comes back in retry_after_ttl: past Powertools' 1 h and retrysafe's 24 h record TTL. */
export const RETRY_AFTER_TTL_MS = 25 * 60 * 60 * 1000;

/**
 * One attempt: one request served by one worker. Set (an `AsyncLocalStorage` store) around everything
 * the worker does, so the seams know whose effect or request it is.
 */
export interface Attempt {
  /** The simulated instant past which the worker is gone (its function's timeout). */
  readonly deadlineMs: number;
  /** Park here, just before the effect, until released (a held request, one of two at once). */
  beforeEffect?: () => Promise<void>;
  /** Die right after the effect. */
  killAfterEffect?: boolean;
  /** Throttle the n-th DynamoDB request sent after the effect (1-based). */
  throttleAfterEffect?: number;
  /** Set once the effect returned. */
  effectDone: boolean;
  requestsAfterEffect: number;
  /** Called once when the worker dies (killed, or past its deadline): nothing it does is sent after. */
  onDeath: (why: 'killed' | 'timed_out') => void;
}

const attempts = new AsyncLocalStorage<Attempt>();

/** Runs `work` as `attempt`. */
export function asAttempt<T>(attempt: Attempt, work: () => Promise<T>): Promise<T> {
  return attempts.run(attempt, work);
}

/** A promise that never settles: what a dead worker's pending work becomes. */
function never<T>(): Promise<T> {
  return new Promise<T>(() => undefined);
}

/**
 * The effect seam: every approach's tool calls its one effect (the provider's refund, the ticket's
 * write, the email's delivery) through it. Outside an attempt (the completer's re-runs, the harness's
 * own reads) it is the effect itself.
 */
export async function effect<T>(perform: () => Promise<T>): Promise<T> {
  const attempt = attempts.getStore();
  if (!attempt) return perform();
  if (attempt.beforeEffect) await attempt.beforeEffect();
  const result = await perform();
  attempt.effectDone = true;
  if (attempt.killAfterEffect) {
    attempt.onDeath('killed');
    return never();
  }
  return result;
}

/** An error as the AWS SDK raises a throttled request once its own retries gave up. */
function throttled(): Error {
  return Object.assign(new Error('Rate of requests exceeds the allowed throughput.'), {
    name: 'ThrottlingException',
    $fault: 'client',
    $retryable: { throttling: true },
    $metadata: { httpStatusCode: 400, attempts: 3 },
  });
}

/**
 * The store seam, on the one DynamoDB client every approach uses: a worker past its deadline sends
 * nothing more (Lambda ended it), and the request an attempt's `throttleAfterEffect` names fails as
 * throttled. At the `initialize` step, before the SDK's retry strategy: the throttle is what the code
 * sees once the SDK gave up.
 */
export function injectStoreFaults(client: DynamoDBClient): void {
  client.middlewareStack.add(
    (next) =>
      async function storeSeam(args) {
        const attempt = attempts.getStore();
        if (!attempt) return next(args);
        if (Date.now() > attempt.deadlineMs) {
          attempt.onDeath('timed_out');
          return never();
        }
        if (attempt.effectDone && attempt.throttleAfterEffect !== undefined) {
          attempt.requestsAfterEffect += 1;
          if (attempt.requestsAfterEffect === attempt.throttleAfterEffect) throw throttled();
        }
        return next(args);
      },
    { step: 'initialize', name: 'benchStoreSeam', priority: 'high' },
  );
}
