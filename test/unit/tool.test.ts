import * as z from 'zod/mini';
import { MAX_WINDOWED_TTL_SECONDS } from '../../lib/idempotency/call-state';
import { defineTool, MAX_LOCK_SECONDS } from '../../lib/idempotency/tool';

const execute = async () => ({ receipt: {}, replayed: false });

describe('defineTool', () => {
  it.each([
    ['a TTL equal to the longest lock', { ttlSeconds: MAX_LOCK_SECONDS }, /ttlSeconds \(900\)/],
    ['a TTL shorter than the lock', { ttlSeconds: 60 }, /ttlSeconds \(60\)/],
    ['a fractional TTL', { ttlSeconds: 1000.5 }, /ttlSeconds/],
    // Its window's intent lives 7 days past the window: a call asked in it under a longer TTL could outlive it
    // (review 22, R22-1).
    [
      'a TTL over 7 days with a dedupe window',
      { ttlSeconds: MAX_WINDOWED_TTL_SECONDS + 1, dedupeWindowSeconds: 600 },
      /ttlSeconds \(604801\) must be at most 604800 \(7 days\) with a dedupe window/,
    ],
    ['a name that is not snake_case', { name: 'Refund-Now' }, /name "Refund-Now"/],
    ['args that declare idempotency_key', { args: z.strictObject({ idempotency_key: z.string() }) }, /idempotency_key/],
    ['args that are not strict', { args: z.object({ text: z.string() }) }, /z\.strictObject/],
    // A JS config has no types to stop it: "yes" would run every call in the request without a word (review 3, H2).
    [
      'longRunning that is not a boolean',
      { longRunning: 'yes' as unknown as boolean },
      /longRunning \("yes"\) must be true or false/,
    ],
  ])('refuses %s', (_label, override, message) => {
    const annotations = { destructiveHint: false, openWorldHint: false };
    const definition = {
      name: 'send_note',
      description: 'd',
      args: z.strictObject({}),
      annotations,
      execute,
      ...override,
    };

    expect(() => defineTool(definition)).toThrow(message);
  });

  it('refuses a TTL that ends within the tolerated clock skew of the lock', () => {
    expect(() =>
      defineTool({
        name: 'send_note',
        description: 'd',
        args: z.strictObject({}),
        annotations: { destructiveHint: false, openWorldHint: false },
        ttlSeconds: 909,
        execute,
      }),
    ).toThrow('ttlSeconds (909) must be a whole number of seconds, at least 910');
  });

  it('accepts a TTL over 7 days on a tool with no dedupe window, and 7 days on one with a window', () => {
    const base = {
      name: 'send_note',
      description: 'd',
      args: z.strictObject({}),
      annotations: { destructiveHint: false, openWorldHint: false },
      execute,
    };

    expect(defineTool({ ...base, ttlSeconds: 30 * 86_400 }).ttlSeconds).toBe(30 * 86_400);
    expect(defineTool({ ...base, ttlSeconds: MAX_WINDOWED_TTL_SECONDS, dedupeWindowSeconds: 600 }).ttlSeconds).toBe(
      MAX_WINDOWED_TTL_SECONDS,
    );
  });

  it('accepts a TTL the lock and the tolerated clock skew long', () => {
    const tool = defineTool({
      name: 'send_note',
      description: 'd',
      args: z.strictObject({}),
      annotations: { destructiveHint: false, openWorldHint: false },
      ttlSeconds: 910,
      execute,
    });

    expect(tool.ttlSeconds).toBe(910);
  });
});
