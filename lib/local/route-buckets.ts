import type { RouteDefinition } from '../api/routes';
import { type RouteThrottle, STAGE_THROTTLE } from '../api/throttle';

/** One token bucket: full at `burstLimit`, refilled at `rateLimit` tokens a second; a request takes one. */
class TokenBucket {
  readonly #throttle: RouteThrottle;
  #tokens: number;
  #filledAtMs: number;

  constructor(throttle: RouteThrottle, nowMs: number) {
    this.#throttle = throttle;
    this.#tokens = throttle.burstLimit;
    this.#filledAtMs = nowMs;
  }

  take(nowMs: number): boolean {
    const elapsedMs = Math.max(0, nowMs - this.#filledAtMs);
    this.#tokens = Math.min(this.#throttle.burstLimit, this.#tokens + (elapsedMs * this.#throttle.rateLimit) / 1000);
    this.#filledAtMs = nowMs;
    if (this.#tokens < 1) return false;
    this.#tokens -= 1;
    return true;
  }
}

/**
 * API Gateway's throttling as the local server models it: a bucket per route key, sized as the stack sizes
 * it (`route.throttle`, else `STAGE_THROTTLE`; `$default` included). Every request that reaches a route
 * takes a token before the authorizer looks at it — the worse of the two orders API Gateway might use, so
 * what passes here passes there.
 */
export class RouteBuckets {
  readonly #buckets = new Map<string, TokenBucket>();
  readonly #now: () => number;

  /** @param now the clock, in ms @default Date.now */
  constructor(now: () => number = Date.now) {
    this.#now = now;
  }

  /** Whether `route`'s bucket (or `$default`'s, for no route) admits one more request now. */
  admit(route: RouteDefinition | undefined): boolean {
    const key = route ? `${route.method} ${route.path}` : '$default';
    const now = this.#now();
    let bucket = this.#buckets.get(key);
    if (!bucket) {
      bucket = new TokenBucket(route?.throttle ?? STAGE_THROTTLE, now);
      this.#buckets.set(key, bucket);
    }
    return bucket.take(now);
  }
}
