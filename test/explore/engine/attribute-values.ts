import { createHash } from 'node:crypto';
import type { AttributeValue } from '@aws-sdk/client-dynamodb';

/** An item as the wire carries it: attribute name → AttributeValue (the SDK's low-level shape). */
export type Item = Record<string, AttributeValue>;

/** A refusal DynamoDB would send: its error name (`__type`'s last part), message and extra members. */
export class DynamoDBError extends Error {
  constructor(
    readonly type: string,
    message: string,
    readonly members: Record<string, unknown> = {},
  ) {
    super(message);
    this.name = type;
  }
}

export function validation(message: string): DynamoDBError {
  return new DynamoDBError('ValidationException', message);
}

/**
 * A request the model does not implement (a parameter, an operator, a type the code never sent when the
 * model was written): never answered as if it were DynamoDB's answer. The engine records it, the
 * explorer stops on it.
 */
export class NotModelledError extends Error {
  constructor(what: string) {
    super(`not modelled by the in-memory engine: ${what}`);
    this.name = 'NotModelledError';
  }
}

/** The type of an attribute value: `S`, `N`, `M`… (its one member). */
export function typeOf(value: AttributeValue): string {
  for (const key in value) if ((value as unknown as Record<string, unknown>)[key] !== undefined) return key;
  throw validation('Supplied AttributeValue is empty, must contain exactly one of the supported datatypes');
}

// ---- numbers: exact decimals, as DynamoDB (and DynamoDB Local's BigDecimal) keeps them ----

/** A decimal `mantissa × 10^exponent`, the mantissa without trailing zeros (zero: 0n × 10^0). */
interface Decimal {
  readonly mantissa: bigint;
  readonly exponent: number;
}

const NUMBER = /^([+-]?)(\d*)(?:\.(\d*))?(?:[eE]([+-]?\d+))?$/;

export function parseNumber(text: string): Decimal {
  const match = NUMBER.exec(text.trim());
  if (!match || (match[2] === '' && (match[3] ?? '') === '')) {
    throw validation(`The parameter cannot be converted to a numeric value: ${text}`);
  }
  const [, sign, whole, fraction = '', exponent = '0'] = match;
  let mantissa = BigInt(`${whole}${fraction}` || '0');
  let scale = Number(exponent) - fraction.length;
  if (mantissa === 0n) return { mantissa: 0n, exponent: 0 };
  while (mantissa % 10n === 0n) {
    mantissa /= 10n;
    scale += 1;
  }
  return { mantissa: sign === '-' ? -mantissa : mantissa, exponent: scale };
}

/** Java's `BigDecimal.stripTrailingZeros().toPlainString()`: how DynamoDB Local stores and returns a number. */
export function formatNumber({ mantissa, exponent }: Decimal): string {
  if (mantissa === 0n) return '0';
  const negative = mantissa < 0n;
  const digits = (negative ? -mantissa : mantissa).toString();
  let plain: string;
  if (exponent >= 0) plain = digits + '0'.repeat(exponent);
  else if (-exponent >= digits.length) plain = `0.${'0'.repeat(-exponent - digits.length)}${digits}`;
  else plain = `${digits.slice(0, exponent)}.${digits.slice(exponent)}`;
  return negative ? `-${plain}` : plain;
}

export function normaliseNumber(text: string): string {
  return formatNumber(parseNumber(text));
}

function aligned(a: Decimal, b: Decimal): [bigint, bigint, number] {
  const exponent = Math.min(a.exponent, b.exponent);
  return [
    a.mantissa * 10n ** BigInt(a.exponent - exponent),
    b.mantissa * 10n ** BigInt(b.exponent - exponent),
    exponent,
  ];
}

export function compareNumbers(a: string, b: string): number {
  const [x, y] = aligned(parseNumber(a), parseNumber(b));
  return x < y ? -1 : x > y ? 1 : 0;
}

export function addNumbers(a: string, b: string, sign: 1 | -1 = 1): string {
  const [x, y, exponent] = aligned(parseNumber(a), parseNumber(b));
  return normaliseNumber(`${x + BigInt(sign) * y}e${exponent}`);
}

// ---- comparison and equality ----

const utf8Length = (text: string) => Buffer.byteLength(text, 'utf8');

/** A binary value's bytes: base64 text as the wire (JSON) carries it, or bytes. */
export function bytesOf(binary: Uint8Array | string): Buffer {
  return typeof binary === 'string' ? Buffer.from(binary, 'base64') : Buffer.from(binary);
}

/**
 * Two strings in the order of their UTF-8 bytes, which is the order of their code points. UTF-16 code
 * units (JavaScript's `<`) have that order too, except a surrogate against a unit from U+E000 up.
 */
function compareUtf8(a: string, b: string): number {
  if (a === b) return 0;
  const length = Math.min(a.length, b.length);
  for (let i = 0; i < length; i++) {
    const x = a.charCodeAt(i);
    const y = b.charCodeAt(i);
    if (x === y) continue;
    const surrogate = (c: number) => c >= 0xd800 && c <= 0xdfff;
    if (surrogate(x) || surrogate(y)) return a.codePointAt(i)! - b.codePointAt(i)!;
    return x - y;
  }
  return a.length - b.length;
}

/** Order of two scalars of one type (S: UTF-8 bytes, N: numeric, B: bytes); undefined if not comparable. */
export function compareScalars(a: AttributeValue, b: AttributeValue): number | undefined {
  if (a.S !== undefined) return b.S !== undefined ? compareUtf8(a.S, b.S) : undefined;
  const type = typeOf(a);
  if (type !== typeOf(b)) return undefined;
  if (type === 'N') return compareNumbers(a.N!, b.N!);
  if (type === 'B') return Buffer.compare(bytesOf(a.B!), bytesOf(b.B!));
  return undefined;
}

/** DynamoDB's equality: same type and value (sets in any order, numbers by value). */
export function equalValues(a: AttributeValue, b: AttributeValue): boolean {
  if (a.S !== undefined) return a.S === b.S;
  const type = typeOf(a);
  if (type !== typeOf(b)) return false;
  switch (type) {
    case 'S':
    case 'N':
    case 'B':
      return compareScalars(a, b) === 0;
    case 'BOOL':
      return a.BOOL === b.BOOL;
    case 'NULL':
      return true;
    case 'SS':
    case 'NS':
    case 'BS': {
      const left = setMembers(a);
      const right = setMembers(b);
      return left.length === right.length && left.every((member) => right.some((other) => equalValues(member, other)));
    }
    case 'L':
      return a.L!.length === b.L!.length && a.L!.every((element, i) => equalValues(element, b.L![i]!));
    case 'M':
      return equalItems(a.M!, b.M!);
    default:
      throw new NotModelledError(`attribute type ${type}`);
  }
}

export function equalItems(a: Item | undefined, b: Item | undefined): boolean {
  if (a === undefined || b === undefined) return a === b;
  const names = Object.keys(a);
  return names.length === Object.keys(b).length && names.every((name) => b[name] && equalValues(a[name]!, b[name]!));
}

/** A set's members as scalar attribute values. */
export function setMembers(value: AttributeValue): AttributeValue[] {
  if (value.SS) return value.SS.map((S) => ({ S }));
  if (value.NS) return value.NS.map((N) => ({ N }));
  if (value.BS) return value.BS.map((B) => ({ B }));
  throw new Error('not a set');
}

/** A value as stored: numbers normalised (also inside maps, lists and sets), like DynamoDB Local. */
export function stored(value: AttributeValue): AttributeValue {
  switch (typeOf(value)) {
    case 'N':
      return { N: normaliseNumber(value.N!) };
    case 'NS':
      return { NS: value.NS!.map(normaliseNumber) };
    case 'L':
      return { L: value.L!.map(stored) };
    case 'M':
      return { M: storedItem(value.M!) };
    case 'SS':
    case 'BS':
      if ((value.SS ?? value.BS)!.length === 0) {
        throw validation('One or more parameter values were invalid: An string set  may not be empty');
      }
      return value;
    default:
      return value;
  }
}

export function storedItem(item: Item): Item {
  const copy: Item = {};
  for (const [name, value] of Object.entries(item)) copy[name] = stored(value);
  return copy;
}

// ---- sizes, as DynamoDB Local counts them (its 1 MB pages and its capacity units) ----

/** Bytes of a number as DynamoDB Local encodes it (`LocalDBUtils.encodeBigDecimal`). */
function numberSize(text: string): number {
  const { mantissa, exponent } = parseNumber(text);
  if (mantissa === 0n) return 1;
  const negative = mantissa < 0n;
  const precision = (negative ? -mantissa : mantissa).toString().length;
  const odd = (precision + exponent) % 2 !== 0;
  const bytes = Math.floor((precision + (odd ? 1 : 0) + 1) / 2);
  return bytes + 1 + (negative && bytes < 20 ? 1 : 0);
}

export function valueSize(value: AttributeValue): number {
  switch (typeOf(value)) {
    case 'S':
      return utf8Length(value.S!);
    case 'N':
      return numberSize(value.N!);
    case 'B':
      return bytesOf(value.B!).length;
    case 'SS':
      return value.SS!.reduce((sum, member) => sum + utf8Length(member), 0);
    case 'NS':
      return value.NS!.reduce((sum, member) => sum + numberSize(member), 0);
    case 'BS':
      return value.BS!.reduce((sum, member) => sum + bytesOf(member).length, 0);
    case 'BOOL':
    case 'NULL':
      return 1;
    case 'L':
      return value.L!.reduce((sum, element) => sum + valueSize(element), 0) + value.L!.length + 3;
    case 'M':
      return itemSize(value.M!) + Object.keys(value.M!).length + 3;
    default:
      throw new NotModelledError(`attribute type ${typeOf(value)}`);
  }
}

/** An item's size: each attribute's name (UTF-8) and value. */
export function itemSize(item: Item): number {
  let size = 0;
  for (const name in item) size += utf8Length(name) + valueSize(item[name]!);
  return size;
}

// ---- the partition key's place in the table (DynamoDB Local's scan order and segments) ----

/** DynamoDB Local's salt for the hash of a partition key (`LocalDBUtils.SALT`, "LocalDdb"). */
const SALT = Buffer.from('LocalDdb');

/** The 20-byte hash DynamoDB Local orders partitions by (and splits into Scan segments). */
export function partitionHash(value: AttributeValue): Buffer {
  const digest = createHash('sha1').update(SALT);
  if (value.S !== undefined) return digest.update(value.S, 'utf8').digest();
  if (value.B !== undefined) return digest.update(bytesOf(value.B)).digest();
  throw new NotModelledError('a number partition key (its hash is not modelled)');
}

const MAX_HASH = (1n << 160n) - 1n;

/** The hash range of Scan segment `segment` of `total` (DynamoDB Local's `ScanFunction`), inclusive. */
export function segmentRange(segment: number, total: number): [Buffer, Buffer] {
  const width = MAX_HASH / BigInt(total);
  const begin = width * BigInt(segment);
  const end = segment + 1 === total ? MAX_HASH : width * BigInt(segment + 1) - 1n;
  const bytes = (n: bigint) => Buffer.from(n.toString(16).padStart(40, '0'), 'hex');
  return [bytes(begin), bytes(end)];
}
