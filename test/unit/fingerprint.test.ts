// Rule 3 (docs/state-machine.md): an intent’s downstream key is fixed once.
import { downstreamKey, fingerprint } from '../../lib/idempotency/fingerprint';

describe('fingerprint', () => {
  it('ignores field order, at every depth', () => {
    expect(fingerprint({ a: 1, b: { c: [1, 2], d: 'x' } })).toBe(fingerprint({ b: { d: 'x', c: [1, 2] }, a: 1 }));
  });

  it.each([
    [{ amount: 100 }, { amount: 101 }],
    [{ to: 'a@example.com' }, { to: 'A@example.com' }],
    [{ items: [1, 2] }, { items: [2, 1] }],
    [{ note: null }, {}],
  ])('tells %j from %j', (a, b) => {
    expect(fingerprint(a)).not.toBe(fingerprint(b));
  });
});

describe('downstreamKey', () => {
  const natural = { kind: 'natural', naturalKey: { invoice_id: 'inv_1' } } as const;

  it('is the same string on every call for one scope', () => {
    expect(downstreamKey('refund', { tenant: 't1' }, natural)).toBe(downstreamKey('refund', { tenant: 't1' }, natural));
    expect(downstreamKey('refund', { tenant: 't1' }, natural)).toMatch(/^rs1_[0-9a-f]{64}$/);
  });

  it('differs per tenant and per tool', () => {
    const base = downstreamKey('refund', { tenant: 't1' }, natural);

    expect(downstreamKey('refund', { tenant: 't2' }, natural)).not.toBe(base);
    expect(downstreamKey('close_ticket', { tenant: 't1' }, natural)).not.toBe(base);
  });

  it('scopes a client key per user, and cannot be confused by separators inside values', () => {
    const client = (user: string, clientKey: string, fingerprint = 'f1') =>
      downstreamKey('send_email', { tenant: 't1' }, { kind: 'client', user, clientKey, fingerprint });
    const a = client('ada', 'k1');

    expect(client('carol', 'k1')).not.toBe(a);
    expect(client('ad', 'ak1')).not.toBe(a);
    expect(client('ada', 'k1')).toBe(a);
  });

  it('gives other arguments under a reused client key another downstream key: they never meet its effect', () => {
    const first = downstreamKey(
      'send_email',
      { tenant: 't1' },
      { kind: 'client', user: 'ada', clientKey: 'k1', fingerprint: 'f1' },
    );

    expect(
      downstreamKey(
        'send_email',
        { tenant: 't1' },
        { kind: 'client', user: 'ada', clientKey: 'k1', fingerprint: 'f2' },
      ),
    ).not.toBe(first);
  });
});
