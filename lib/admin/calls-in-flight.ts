import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DEFAULT_TTL_SECONDS, inFlightAgeSeconds, inFlightCallOf, inFlightFilter } from '../idempotency';
import { maxAttemptsOf } from '../idempotency/backoff';
import { DEFAULT_RECORD_ATTRIBUTES as ATTR } from '../idempotency/protocol/record';
import { scanTenantRecords } from './tenant-scan';

/** The states `retrysafe calls` shows a call in flight in (`CallInFlight.state`). */
export const CALL_IN_FLIGHT_STATES = ['pending', 'abandoned', 'stalled'] as const;

/** A call in flight, as an operator reads it. */
export interface CallInFlight {
  readonly tool: string;
  /**
   * `pending`: its lock is live (an attempt runs, or it was parked); `abandoned`: its lock ended, a retry
   * or the completer finishes it; `stalled`: the completer gave up on it, only a retry with its key does.
   */
  readonly state: (typeof CALL_IN_FLIGHT_STATES)[number];
  /** The record key (`<tool>#<hash>`): the call's name in the logs and in `get_operation`. */
  readonly recordKey: string;
  readonly user: string | undefined;
  /** The client's idempotency key, while the record carries the call. */
  readonly clientKey: string | undefined;
  /** Attempts that claimed it: 1, then +1 per takeover. */
  readonly attempts: number;
  /** None of its attempts has run its tool yet (a hand-off, a dedupe window's holder in the way): nothing happened. */
  readonly queued: boolean;
  /**
   * Abandoned, and the completer's next look gives it up (then `stalled`) rather than re-run it: its
   * attempts are used up, or its re-run would be due past its last look before its TTL. Only a retry with
   * its key finishes it.
   */
  readonly givesUp: 'attempts' | 'expiring' | undefined;
  /** Since its first claim, in seconds (from its TTL and its tool's `ttlSeconds`), when the tool is known. */
  readonly ageSeconds: number | undefined;
  /** When its lock ends (epoch ms): a `pending` call is answered `pending` until then. */
  readonly lockEndsMs: number | undefined;
}

export interface CallsInFlightOptions {
  /** Only calls in this state. @default both */
  readonly state?: CallInFlight['state'];
  /** Each tool's `ttlSeconds`, by name, to tell a call's age. @default the default TTL for every tool */
  readonly ttlSecondsByTool?: Readonly<Record<string, number>>;
  /** Parallel segments of the Scan. @default 4 */
  readonly segments?: number;
  /** @default Date.now() */
  readonly nowMs?: number;
  /** The runtime's `maxAttempts` the stack runs with (`ToolRuntimeOptions.maxAttempts`). @default MAX_ATTEMPTS (8) */
  readonly maxAttempts?: number;
}

export interface CallsInFlightReport {
  readonly calls: readonly CallInFlight[];
  /** Read units the Scan consumed: it reads the whole idempotency table (no index costs a write per call). */
  readonly readUnits: number;
}

/**
 * A tenant's calls in flight, oldest first. By cost: a parallel Scan of the idempotency table filtered on
 * the tenant and the in-progress status, as tenant erase searches — the record key is a hash, and an
 * index by tenant would add a write unit to every call, so an operator's look pays instead.
 */
export async function callsInFlight(
  client: DynamoDBClient,
  table: string,
  tenant: string,
  options: CallsInFlightOptions = {},
): Promise<CallsInFlightReport> {
  const nowMs = options.nowMs ?? Date.now();
  const segments = options.segments ?? 4;
  const maxAttempts = maxAttemptsOf(options.maxAttempts);
  const calls: CallInFlight[] = [];
  // Intents (dedupe windows) carry no call: only call records.
  const readUnits = await scanTenantRecords(
    client,
    table,
    tenant,
    { segments, filter: inFlightFilter(ATTR) },
    (item) => {
      const call = inFlightCallOf(item, nowMs, ATTR, maxAttempts);
      if (!call) return; // expired: no call any more
      const shown = call.state === 'live' ? 'pending' : call.state;
      if (options.state !== undefined && options.state !== shown) return;
      const tool = call.tool ?? call.recordKey.slice(0, call.recordKey.indexOf('#'));
      const ttl = options.ttlSecondsByTool?.[tool] ?? DEFAULT_TTL_SECONDS;
      calls.push({
        tool,
        state: shown,
        recordKey: call.recordKey,
        user: call.user,
        clientKey: call.clientKey,
        attempts: call.attempt,
        queued: call.queued,
        givesUp: call.givesUp,
        ageSeconds: inFlightAgeSeconds(call, nowMs, ttl),
        lockEndsMs: call.lockEndsMs,
      });
    },
  );
  calls.sort((a, b) => (b.ageSeconds ?? 0) - (a.ageSeconds ?? 0) || a.recordKey.localeCompare(b.recordKey));
  return { calls, readUnits };
}
