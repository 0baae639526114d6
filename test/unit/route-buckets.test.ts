/**
 * API Gateway's throttling as the local server models it (`lib/local/route-buckets.ts`): a token bucket
 * per route key, sized from the route's `throttle` (else the stage's), on a clock the test holds.
 */
import { apiRoutes, type RouteDefinition } from '../../lib/api/routes';
import { RouteBuckets } from '../../lib/local/route-buckets';

const routes = apiRoutes([{ name: 'create_invoice', access: {} }]);
const route = (key: string): RouteDefinition => routes.find((r) => `${r.method} ${r.path}` === key)!;

/** How many of `count` requests sent at once the bucket admits. */
function admitted(buckets: RouteBuckets, target: RouteDefinition | undefined, count: number): number {
  let admittedCount = 0;
  for (let i = 0; i < count; i++) if (buckets.admit(target)) admittedCount += 1;
  return admittedCount;
}

describe('RouteBuckets', () => {
  it.each([
    ['POST /mcp', 30],
    ['GET /health', 10],
    ['GET /.well-known/oauth-protected-resource/mcp', 10],
    ['GET /mcp', 10],
    ['POST /tools/create_invoice', 200],
  ])('admits a burst of %s up to its bucket (%i), then none until it refills', (key, burst) => {
    const now = 1_000_000;
    const buckets = new RouteBuckets(() => now);

    expect(admitted(buckets, route(key), burst + 5)).toBe(burst);
    expect(buckets.admit(route(key))).toBe(false);
  });

  it("refills at the route's rate: POST /mcp takes 30 more over one second, not more", () => {
    let now = 1_000_000;
    const buckets = new RouteBuckets(() => now);
    admitted(buckets, route('POST /mcp'), 30);

    now += 500;
    const afterHalf = admitted(buckets, route('POST /mcp'), 100);
    now += 500;
    const afterOne = admitted(buckets, route('POST /mcp'), 100);

    expect([afterHalf, afterOne]).toEqual([15, 15]);
  });

  it('keeps each route key apart: a flood of one route leaves the others their buckets', () => {
    const now = 1_000_000;
    const buckets = new RouteBuckets(() => now);

    admitted(buckets, route('GET /health'), 50);

    expect(buckets.admit(route('GET /health'))).toBe(false);
    expect(admitted(buckets, route('POST /mcp'), 30)).toBe(30);
    expect(buckets.admit(undefined)).toBe(true); // $default: the stage's bucket
  });
});
