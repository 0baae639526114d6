import { AsyncLocalStorage } from 'node:async_hooks';

/** What a deadline is read from: a Lambda context, or any object with a real remaining time. */
export interface RemainingTime {
  getRemainingTimeInMillis(): number;
}

/**
 * Time kept back at the end of an invocation for answering: DynamoDB calls stop this long before the
 * deadline, so the function answers a JSON 503 itself before Lambda (or the local server) cuts it off.
 */
export const ANSWER_RESERVE_MS = 1_000;

/** The end of the current invocation (epoch ms), for every DynamoDB call made on its behalf. */
const invocationEnd = new AsyncLocalStorage<number>();

/**
 * Runs `work` as one invocation that ends at `deadline`: every DynamoDB call it makes — Powertools'
 * claims, the domain writes, however deep — is bounded by that end and aborted at it. A handler that
 * runs late (the local server stops waiting; Lambda would have frozen it) can no longer write anywhere.
 */
export function withInvocationDeadline<T>(deadline: RemainingTime, work: () => Promise<T>): Promise<T> {
  return invocationEnd.run(Date.now() + deadline.getRemainingTimeInMillis(), work);
}

/** How long a DynamoDB call started now may take, or undefined outside an invocation. */
export function timeLeftForStoreCall(): number | undefined {
  const end = invocationEnd.getStore();
  return end === undefined ? undefined : end - ANSWER_RESERVE_MS - Date.now();
}

/** A store call refused or cut off by the invocation's deadline: transient (`TimeoutError`), so `unavailable`. */
export function deadlineError(): Error {
  return Object.assign(new Error('the invocation deadline leaves no time for this store call'), {
    name: 'TimeoutError',
  });
}
