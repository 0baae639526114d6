import { IdempotencyConfig } from '@aws-lambda-powertools/idempotency';
import { BasePersistenceLayer, type IdempotencyRecord } from '@aws-lambda-powertools/idempotency/persistence';
import fc from 'fast-check';
import { expiresAtSOf, idempotencyDisabled, recordKeyOf, validationOf } from '../../lib/idempotency/derivation';
import { intentKeyOf } from '../../lib/idempotency/protocol/intent';

/**
 * Powertools 2.35 itself, configured as the runtime configured it while it ran Powertools' handler
 * (`makeIdempotent` with this config and key prefix): the record it would write for a payload. Nothing is
 * written anywhere — `_putRecord` only keeps the record.
 */
class PowertoolsRecord extends BasePersistenceLayer {
  written: IdempotencyRecord | undefined;

  constructor(tool: string, ttlSeconds: number) {
    super();
    this.configure({
      config: new IdempotencyConfig({
        eventKeyJmesPath: 'scope',
        payloadValidationJmesPath: 'fingerprint',
        throwOnNoIdempotencyKey: true,
        expiresAfterSeconds: ttlSeconds,
        hashFunction: 'sha256',
      }),
      keyPrefix: tool,
    });
  }

  static async of(tool: string, ttlSeconds: number, payload: object): Promise<IdempotencyRecord> {
    const layer = new PowertoolsRecord(tool, ttlSeconds);
    await layer.saveInProgress(payload as never, 1_000);
    if (!layer.written) throw new Error('Powertools wrote no record');
    return layer.written;
  }

  protected override async _putRecord(record: IdempotencyRecord): Promise<void> {
    this.written = record;
  }
  protected override async _getRecord(): Promise<IdempotencyRecord> {
    throw new Error('not read');
  }
  protected override async _updateRecord(): Promise<void> {}
  protected override async _deleteRecord(): Promise<void> {}
}

const text = fc.string({ minLength: 1, maxLength: 40, unit: 'grapheme' });
const tool = fc.stringMatching(/^[a-z][a-z0-9_]{0,20}$/);
const hex = fc.stringMatching(/^[0-9a-f]{64}$/);

describe('the record key and validation hash, derived without Powertools’ handler', () => {
  it('are the bytes Powertools 2.35 derives, so records written before are found', async () => {
    await fc.assert(
      fc.asyncProperty(tool, text, text, text, hex, async (name, tenant, user, clientKey, fingerprint) => {
        const scope = [tenant, user, clientKey] as const;

        const powertools = await PowertoolsRecord.of(name, 3_600, { scope, fingerprint });

        expect(recordKeyOf(name, scope)).toBe(powertools.idempotencyKey);
        expect(validationOf(fingerprint)).toBe(powertools.payloadHash);
      }),
      { numRuns: 300 },
    );
  });

  it('keeps known keys byte for byte (a change here orphans every record in every table)', () => {
    expect(recordKeyOf('refund', ['acme', 'ada', 'k1'])).toBe('refund#1SoIeIdpLfbrvHkO45XA15kOJYWCy+UaizaBJPv4N8c=');
    expect(validationOf('0'.repeat(64))).toBe('GqjoRDiBdC5m/ozVI6MbtBmcBae8/if4nz1I0gdkrEk=');
  });

  it('sets the TTL Powertools set: now plus the TTL, rounded to the second', async () => {
    const before = Date.now();
    const powertools = await PowertoolsRecord.of('refund', 86_400, { scope: ['t', 'u', 'k'], fingerprint: 'f' });
    const after = Date.now();

    expect(powertools.expiryTimestamp).toBeGreaterThanOrEqual(expiresAtSOf(86_400, before));
    expect(powertools.expiryTimestamp).toBeLessThanOrEqual(expiresAtSOf(86_400, after));
    expect(expiresAtSOf(60, 1_000_499)).toBe(1_060);
    expect(expiresAtSOf(60, 1_000_500)).toBe(1_061);
  });
});

describe('an intent key', () => {
  it('is the tool, #intent# and the SHA-256 of [tenant, user, fingerprint] in hex: scoped, never the arguments', () => {
    const key = intentKeyOf({ tool: 'send_email', identity: { tenant: 'acme', user: 'ada' }, fingerprint: 'f1' });

    expect(key).toMatch(/^send_email#intent#[0-9a-f]{64}$/);
    expect(key).toBe(intentKeyOf({ tool: 'send_email', identity: { tenant: 'acme', user: 'ada' }, fingerprint: 'f1' }));
    expect(key).not.toBe(
      intentKeyOf({ tool: 'send_email', identity: { tenant: 'acme', user: 'bob' }, fingerprint: 'f1' }),
    );
  });
});

describe('POWERTOOLS_IDEMPOTENCY_DISABLED', () => {
  afterEach(() => {
    delete process.env.POWERTOOLS_IDEMPOTENCY_DISABLED;
  });

  it.each([
    ['true', true],
    ['1', true],
    ['yes', true],
    ['on', true],
    ['false', false],
    ['0', false],
    [undefined, false],
  ])('set to %s is read as Powertools reads it (disabled: %s)', (value, disabled) => {
    if (value !== undefined) process.env.POWERTOOLS_IDEMPOTENCY_DISABLED = value;

    expect(idempotencyDisabled()).toBe(disabled);
    expect(idempotencyDisabled()).toBe(!new IdempotencyConfig({}).isEnabled());
  });
});
