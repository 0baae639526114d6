import { decodeReceipt, encodeReceipt, MAX_RECEIPT_BYTES } from '../../lib/idempotency/receipt';

/**
 * A receipt as stored (receipt.ts): canonical JSON text, checked before anything is stored — a receipt a
 * store could refuse after the effect ran would leave the call to run again.
 */
describe('encodeReceipt', () => {
  it('stores canonical JSON text: the same receipt is the same bytes whatever its key order', () => {
    const text = encodeReceipt('refund', { b: 2, a: { d: [1, 'x'], c: null } });

    expect(text).toBe('{"a":{"c":null,"d":[1,"x"]},"b":2}');
    expect(encodeReceipt('refund', { a: { c: null, d: [1, 'x'] }, b: 2 })).toBe(text);
    expect(decodeReceipt(text)).toEqual({ a: { c: null, d: [1, 'x'] }, b: 2 });
  });

  it.each([
    ['not an object', 'ok', /not a JSON object/],
    ['an array', [1], /not a JSON object/],
    ['a Date inside', { at: new Date(0) }, /not plain JSON at \$\.at \(Date\)/],
    ['a number JSON cannot say', { n: [1, Number.NaN] }, /not plain JSON at \$\.n\[1\] \(NaN\)/],
    ['a function inside', { f: () => 1 }, /not plain JSON at \$\.f \(function\)/],
    ['an instance of a class inside a list', { list: [1, new Map()] }, /not plain JSON at \$\.list\[1\] \(Map\)/],
    [
      'an object whose prototype has no constructor',
      { o: Object.create(Object.create(null)) },
      /not plain JSON at \$\.o \(object\)/,
    ],
    ['a number past JSON', { n: Number.POSITIVE_INFINITY }, /not plain JSON at \$\.n \(Infinity\)/],
    ['a bigint', { n: 1n }, /not plain JSON at \$\.n \(bigint\)/],
  ])('refuses %s as internal, naming where', (_what, receipt, message) => {
    expect(() => encodeReceipt('refund', receipt)).toThrow(expect.objectContaining({ code: 'internal' }));
    expect(() => encodeReceipt('refund', receipt)).toThrow(message);
  });

  it('stores an object without a prototype as any object (a JSON parse with a null-prototype reviver makes them)', () => {
    const bare = Object.assign(Object.create(null), { b: 1, a: Object.assign(Object.create(null), { c: true }) });

    expect(encodeReceipt('refund', bare)).toBe('{"a":{"c":true},"b":1}');
  });

  it('refuses a receipt over 32 KiB of UTF-8, and stores one at exactly the limit', () => {
    const padding = '{"s":""}'.length;
    const atLimit = { s: 'x'.repeat(32 * 1024 - padding) };
    const over = { s: `${'x'.repeat(32 * 1024 - padding - 1)}é` }; // é is two bytes in UTF-8

    expect(Buffer.byteLength(encodeReceipt('refund', atLimit), 'utf8')).toBe(MAX_RECEIPT_BYTES);
    expect(() => encodeReceipt('refund', over)).toThrow(/receipt of 32769 bytes; the limit is 32768/);
  });
});
