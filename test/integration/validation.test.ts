import { createWorld, deadline, identity, type World } from '../helpers/world';

let world: World;
beforeAll(() => {
  world = createWorld();
});
afterAll(() => world.destroy());

describe('bad input gets invalid_args naming the field, and changes nothing', () => {
  it.each([
    ['a missing key', {}, /^idempotency_key: /],
    ['an empty key', { idempotency_key: '' }, /^idempotency_key: must not be empty/],
    ['a 256-character key', { idempotency_key: 'k'.repeat(256) }, /^idempotency_key: must be at most 255/],
    ['a non-ASCII key', { idempotency_key: 'clé' }, /^idempotency_key: must be printable ASCII/],
    ['a key with a control character', { idempotency_key: 'k\n1' }, /^idempotency_key: must be printable ASCII/],
    ['a numeric key', { idempotency_key: 42 }, /^idempotency_key: /],
    ['a null key', { idempotency_key: null }, /^idempotency_key: /],
    ['a missing invoice_id', { idempotency_key: 'k1', amount: 100 }, /^invoice_id: /],
    ['a fractional amount', { idempotency_key: 'k1', invoice_id: 'inv_1', amount: 1.5 }, /^amount: /],
    ['a negative amount', { idempotency_key: 'k1', invoice_id: 'inv_1', amount: -100 }, /^amount: /],
    ['a string amount', { idempotency_key: 'k1', invoice_id: 'inv_1', amount: '100' }, /^amount: /],
    [
      'an unknown field',
      { idempotency_key: 'k1', invoice_id: 'inv_1', amount: 100, note: 'x' },
      /^note: unknown field/,
    ],
    [
      'a __proto__ field',
      JSON.parse('{"idempotency_key":"k1","invoice_id":"inv_1","amount":100,"__proto__":{"admin":true}}'),
      /^__proto__: unknown field/,
    ],
  ])('%s', async (_label, input, message) => {
    const caller = identity();
    const invoice = await world.seedInvoice(caller.tenant, { invoice_id: 'inv_1', amount: 100 });

    const result = await world.runtime.invoke(world.refund, caller, input, deadline());

    expect(result).toEqual({ ok: false, error: { code: 'invalid_args', message: expect.stringMatching(message) } });
    expect(await world.idempotencyRecordKeys(caller.tenant)).toEqual([]);
    expect(await world.ledgerRows(caller.tenant)).toEqual([]);
    expect((await world.invoices.get(caller.tenant, invoice.invoice_id))?.refund).toBeUndefined();
  });

  it.each([
    ['null', null],
    ['an array', [{ idempotency_key: 'k1' }]],
    ['a string', 'refund inv_1'],
    ['a number', 7],
  ])('arguments that are %s', async (_label, input) => {
    const result = await world.runtime.invoke(world.refund, identity(), input, deadline());

    expect(result).toEqual({
      ok: false,
      error: { code: 'invalid_args', message: 'arguments: expected a JSON object' },
    });
  });

  it('accepts a 255-character printable key', async () => {
    const caller = identity();
    const invoice = await world.seedInvoice(caller.tenant);
    const key = `${' !~'.repeat(85)}`;

    const result = await world.runtime.invoke(
      world.refund,
      caller,
      { idempotency_key: key, invoice_id: invoice.invoice_id, amount: invoice.amount },
      deadline(),
    );

    expect(key).toHaveLength(255);
    expect(result).toMatchObject({ ok: true, key });
  });
});
