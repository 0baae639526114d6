import * as z from 'zod/mini';
import { parseCall } from '../../lib/idempotency/arguments';
import { noteTool } from '../helpers/tools';

/**
 * A raw call split into its client key and validated arguments (arguments.ts `parseCall`): refused with
 * invalid_args naming the field a caller must fix, never a silent default.
 */
const { tool } = noteTool('send_note');

describe('parseCall', () => {
  it('splits the client key from the arguments', () => {
    expect(parseCall(tool, { idempotency_key: 'k 1~', text: 'hi' })).toEqual({
      clientKey: 'k 1~',
      args: { text: 'hi' },
    });
  });

  it.each([
    ['not an object', 'hi', 'arguments: expected a JSON object'],
    ['no client key', { text: 'hi' }, /^idempotency_key: /],
    ['an empty client key', { idempotency_key: '', text: 'hi' }, 'idempotency_key: must not be empty'],
    [
      'a client key of 256 characters',
      { idempotency_key: 'k'.repeat(256), text: 'hi' },
      'idempotency_key: must be at most 255 characters',
    ],
    [
      'a client key outside printable ASCII',
      { idempotency_key: 'clé', text: 'hi' },
      'idempotency_key: must be printable ASCII (0x20-0x7E)',
    ],
    [
      'an unknown field (a typo never becomes a default)',
      { idempotency_key: 'k', text: 'hi', txt: 'hi' },
      'txt: unknown field',
    ],
    ['a field that breaks its schema', { idempotency_key: 'k', text: '' }, /^text: /],
  ])('refuses %s as invalid_args, naming the field', (_what, input, message) => {
    expect(() => parseCall(tool, input)).toThrow(expect.objectContaining({ code: 'invalid_args' }));
    expect(() => parseCall(tool, input)).toThrow(message);
  });

  it('reads a null for an optional field as left out (how a strict OpenAI model leaves one out), at any depth', () => {
    const { tool: shipping } = noteTool('send_note');
    const withAddress = {
      ...shipping,
      args: z.strictObject({
        to: z.strictObject({ line1: z.string(), line2: z.optional(z.string()) }),
        note: z.optional(z.nullable(z.string())),
      }),
    } as unknown as typeof tool;

    expect(parseCall(withAddress, { idempotency_key: 'k', to: { line1: 'a', line2: null }, note: null }).args).toEqual({
      to: { line1: 'a' },
      note: null, // a field that takes null keeps it
    });
  });
});
