import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import {
  DEFAULT_RECORD_ATTRIBUTES,
  eraseItem,
  inFlightCallOf,
  inFlightFilter,
  type RecordAttributes,
} from '../../lib/idempotency';
import { recordAttributes } from '../../lib/idempotency/protocol/record';

/**
 * The record's attribute names as the public API takes them (review of issue 34, a restructuring that must
 * not change behaviour). Before it, every public reader of items merged the names a caller gave over the
 * defaults (`{ ...DEFAULT_RECORD_ATTRIBUTES, ...attributes }`): `inFlightFilter(attributes)`,
 * `inFlightCallOf(item, nowMs, attributes)` took a `Partial<RecordAttributes>`, as the runtime, the
 * completer and erase still do. Only the public index is imported, so this file runs unchanged on both
 * sides of the change.
 */

/** The stored names, read without naming the lock's option (`inProgressExpiry` before, `lockEnd` after). */
const NAMES = DEFAULT_RECORD_ATTRIBUTES as unknown as Record<string, string>;
const LOCK = NAMES.lockEnd ?? NAMES.inProgressExpiry ?? 'in_progress_expiration';

/** A project that renamed one attribute, the way the runtime's `attributes` option allows. */
const STATUS_RENAMED = { status: 'state' } as Partial<RecordAttributes> as RecordAttributes;

/** A call claimed one minute ago whose lock ends in a minute, as the table holds it under `names`. */
function itemInFlight(names: Record<string, string>, nowMs: number): Record<string, unknown> {
  return {
    [names.key!]: 'refund#h',
    [names.status!]: 'INPROGRESS',
    [names.callInstance!]: 'i1',
    [names.claim!]: 'c1',
    [names.attempt!]: 1,
    [names.expiry!]: Math.floor(nowMs / 1000) + 3_600,
    [names.lock!]: nowMs + 60_000,
    [names.validation!]: 'v1',
    [names.tenant!]: 'acme',
    [names.tool!]: 'refund',
    [names.createdAt!]: nowMs - 60_000,
  };
}

describe('inFlightFilter, given the names a project renamed', () => {
  it('keeps the default of every name not given (#holder is still the intent holder attribute)', () => {
    const filter = inFlightFilter(STATUS_RENAMED);

    expect(filter.names).toEqual({ '#status': 'state', '#holder': DEFAULT_RECORD_ATTRIBUTES.intentHolder });
  });
});

describe('inFlightCallOf, given the names a project renamed', () => {
  it('reads the call in flight from an item under the renamed name and the defaults', () => {
    const nowMs = Date.now();
    const item = itemInFlight({ ...NAMES, lock: LOCK, status: 'state' }, nowMs);

    expect(inFlightCallOf(item, nowMs, STATUS_RENAMED)).toMatchObject({ state: 'live', recordKey: 'refund#h' });
  });
});

describe("erase, given a layout's lock attribute under the option name it had (inProgressExpiry)", () => {
  it('refuses the option by its name (renamed lockEnd) instead of reading the lock under the default name', async () => {
    // A layout written against the earlier RecordAttributes (`inProgressExpiry: 'lock_ms'`) would otherwise
    // be read with the default lock name: its live call taken for an unreadable item.
    const nowMs = Date.now();
    const attributes = { inProgressExpiry: 'lock_ms' } as Partial<RecordAttributes>;
    const item = itemInFlight({ ...NAMES, lock: 'lock_ms' }, nowMs);

    await expect(eraseItem({ client: {} as DynamoDBClient, attributes }, item, { dryRun: true })).rejects.toThrow(
      /^attributes\.inProgressExpiry: unknown$/,
    );
  });
});

describe('attribute names that collide (review 4, F7)', () => {
  it.each([
    [
      'the unrun attempts’ count named as the status',
      { unrunAttempts: 'status' },
      /attributes\.unrunAttempts: "status" is attributes\.status's name too/,
    ],
    [
      'two renamed options naming one attribute',
      { tenant: 'who', tool: 'who' },
      /attributes\.tool: "who" is attributes\.tenant's name too/,
    ],
  ])('refuses %s, naming the option: one write would land on the other', (_what, given, message) => {
    expect(() => recordAttributes(given)).toThrow(message);
  });

  it('takes a rename to a name no other attribute has', () => {
    expect(recordAttributes({ status: 'state' })).toMatchObject({ status: 'state', unrunAttempts: 'unrun_attempts' });
  });
});

describe('recordAttributes and an option left unset (review 5, F4)', () => {
  it('keeps the default for an option given as undefined (an environment variable that is not there), as Powertools does', () => {
    expect(recordAttributes({ expiry: undefined })).toEqual(DEFAULT_RECORD_ATTRIBUTES);
    expect(recordAttributes({ expiry: undefined, status: undefined })).toEqual(DEFAULT_RECORD_ATTRIBUTES);
  });

  it('refuses a name that is not a non-empty string, naming the option', () => {
    expect(() => recordAttributes({ expiry: '' })).toThrow(
      "attributes.expiry: an attribute's name is a non-empty string",
    );
    expect(() => recordAttributes({ status: 42 as unknown as string })).toThrow(/^attributes\.status: /);
  });
});

describe('recordAttributes refuses an option that names no attribute, inherited names included (review 6)', () => {
  it('R6-6 an option named like an Object.prototype member (toString) is refused as unknown, not merged', async () => {
    const { recordAttributes } = await import('../../lib/idempotency/protocol/record');
    expect(() => recordAttributes(JSON.parse('{"toString":"x"}'))).toThrow('attributes.toString: unknown');
  });
});
