import * as z from 'zod/mini';
import { defineTool, MAX_LOCK_SECONDS } from '../../lib/idempotency/tool';

const execute = async () => ({ receipt: {}, replayed: false });

describe('defineTool', () => {
  it.each([
    ['a TTL equal to the longest lock', { ttlSeconds: MAX_LOCK_SECONDS }, /ttlSeconds \(900\)/],
    ['a TTL shorter than the lock', { ttlSeconds: 60 }, /ttlSeconds \(60\)/],
    ['a fractional TTL', { ttlSeconds: 1000.5 }, /ttlSeconds/],
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
