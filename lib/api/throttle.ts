/**
 * API Gateway's throttling of each route, as plain data: the stack writes it into the stage (its default
 * route settings and one route setting per route that has its own), and the local server counts every
 * request against the same buckets (`lib/local/route-buckets.ts`). Nothing here loads the CDK.
 *
 * Each route key (method and path) has a bucket of its own: a steady rate (requests/s) and a burst (the
 * bucket's size). API Gateway does not document whether a request its JWT authorizer refuses still takes a
 * token from the route's bucket; both views assume it does (the worse case), so a tokenless flood below a
 * route's rate costs the routes' callers nothing, and one above it is a flood of that route alone.
 */

/** One bucket: a steady rate and a burst. */
export interface RouteThrottle {
  /** Requests per second, steady. */
  readonly rateLimit: number;
  /** Requests at once, past the steady rate: the bucket's size. */
  readonly burstLimit: number;
}

/**
 * Every route without a throttle of its own (the stage's default route settings: each route its own
 * bucket of this size, `$default` included).
 * @default { rateLimit: 100, burstLimit: 200 }
 */
export const STAGE_THROTTLE = { rateLimit: 100, burstLimit: 200 } as const satisfies RouteThrottle;

/**
 * `POST /mcp`: every authorized MCP call (the JWT authorizer refuses a request without a valid token
 * before the MCP function runs). Sized to the MCP function's reserved concurrency (50,
 * `MCP_RESERVED_CONCURRENCY`): 30 requests/s of calls that hold an invocation a second or less
 * (`tasks/result` holds one at most `TASK_RESULT_HOLD_MS`) keep ~30 invocations running, and a burst of
 * 30 plus the bursts of the other routes into the same function (4 × `LIGHT_ROUTE_THROTTLE`, answered from
 * memory in a millisecond) is at most 70 requests at once.
 * @default { rateLimit: 30, burstLimit: 30 }
 */
export const MCP_ROUTE_THROTTLE = { rateLimit: 30, burstLimit: 30 } as const satisfies RouteThrottle;

/**
 * Routes answered from memory, which nobody needs often: the public ones (`GET /health`,
 * `/openapi.json`, the two RFC 9728 documents — anyone may call them without a token, so each is held to
 * a small bucket) and `GET`/`DELETE /mcp` (a 405: the endpoint is stateless).
 * @default { rateLimit: 5, burstLimit: 10 }
 */
export const LIGHT_ROUTE_THROTTLE = { rateLimit: 5, burstLimit: 10 } as const satisfies RouteThrottle;
