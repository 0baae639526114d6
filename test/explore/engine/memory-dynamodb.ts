import type { AttributeValue } from '@aws-sdk/client-dynamodb';
import {
  compareScalars,
  DynamoDBError,
  equalItems,
  type Item,
  itemSize,
  NotModelledError,
  partitionHash,
  segmentRange,
  storedItem,
  typeOf,
  validation,
} from './attribute-values';
import {
  applyUpdate,
  type Condition,
  evaluate,
  type Parsed,
  type Path,
  type Placeholders,
  parseCondition,
  parseProjection,
  parseUpdate,
  project,
  resolvePath,
} from './expressions';

/**
 * An in-memory DynamoDB with DynamoDB Streams: exactly the operations retrysafe sends (recorded from the
 * explorer on DynamoDB Local, and grepped from lib/ and app/), answered as DynamoDB Local answers them —
 * scan order and segments by Local's partition hash, its 1 MB pages and capacity units, numbers
 * normalised as it stores them, a stream record only for a write that changed the item. What it does
 * not model is in docs/testing.md (the explorer's section); a request outside it throws
 * {@link NotModelledError} rather than being answered.
 *
 * Requests and answers are the JSON protocol's bodies (`DynamoDB_20120810.*`, `DynamoDBStreams_20120810.*`):
 * the SDK's own serialisation runs in front of it (see `request-handler.ts`). Tables are kept apart by
 * the caller's access key, as DynamoDB Local keeps them.
 */
export class MemoryDynamoDB {
  readonly #namespaces = new Map<string, Tables>();

  /** Answers one request, or throws the {@link DynamoDBError} DynamoDB would answer. */
  handle(namespace: string, operation: string, input: Record<string, unknown>): Record<string, unknown> {
    const tables = this.#tables(namespace);
    const handler = OPERATIONS[operation];
    if (!handler) throw new NotModelledError(`the operation ${operation}`);
    return handler(tables, input, namespace);
  }

  /** Forgets a namespace's tables (a world the explorer is done with). */
  forget(namespace: string): void {
    this.#namespaces.delete(namespace);
  }

  #tables(namespace: string): Tables {
    let tables = this.#namespaces.get(namespace);
    if (!tables) {
      tables = new Tables();
      this.#namespaces.set(namespace, tables);
    }
    return tables;
  }
}

// ---- tables ----

interface KeyAttribute {
  readonly name: string;
  readonly type: 'S' | 'N' | 'B';
}

interface StoredItem {
  /** Replaced in place by a write, so that the scan order (kept until an item comes or goes) stays valid. */
  item: Item;
  /** Its size (`itemSize`), for pages and capacity units. */
  size: number;
  /** DynamoDB Local's partition hash of the item's partition key. */
  readonly hash: Buffer;
}

interface StreamRecord {
  readonly eventID: string;
  readonly eventName: 'INSERT' | 'MODIFY' | 'REMOVE';
  readonly eventVersion: '1.1';
  readonly eventSource: 'aws:dynamodb';
  readonly awsRegion: string;
  readonly dynamodb: Record<string, unknown>;
}

interface Stream {
  readonly arn: string;
  readonly label: string;
  readonly viewType: string;
  readonly shardId: string;
  readonly records: StreamRecord[];
}

const REGION = 'ddblocal';
const ACCOUNT = '000000000000';

class Table {
  readonly items = new Map<string, StoredItem>();
  #ordered: StoredItem[] | undefined;
  readonly created = Date.now();
  ttl: { attribute: string; enabled: boolean } | undefined;
  stream: Stream | undefined;
  #sequence = 0;

  constructor(
    readonly name: string,
    readonly hashKey: KeyAttribute,
    readonly rangeKey: KeyAttribute | undefined,
    readonly definitions: ReadonlyArray<{ AttributeName: string; AttributeType: string }>,
    streamViewType: string | undefined,
  ) {
    if (streamViewType) {
      const label = new Date(this.created).toISOString().replace('Z', '');
      this.stream = {
        arn: `arn:aws:dynamodb:${REGION}:${ACCOUNT}:table/${name}/stream/${label}`,
        label,
        viewType: streamViewType,
        shardId: `shardId-${String(this.created).padStart(20, '0')}-${name.length.toString(16).padStart(8, '0')}`,
        records: [],
      };
    }
  }

  get keyNames(): string[] {
    return this.rangeKey ? [this.hashKey.name, this.rangeKey.name] : [this.hashKey.name];
  }

  /** The item's key attributes, checked against the schema (`what`: a Key or an Item). */
  keyOf(source: Item, what: 'key' | 'item'): Item {
    const key: Item = {};
    for (const attribute of [this.hashKey, ...(this.rangeKey ? [this.rangeKey] : [])]) {
      const value = source[attribute.name];
      if (value === undefined) {
        throw validation(
          what === 'key'
            ? 'The provided key element does not match the schema'
            : `One or more parameter values were invalid: Missing the key ${attribute.name} in the item`,
        );
      }
      if (typeOf(value) !== attribute.type) {
        throw validation(
          what === 'key'
            ? 'The provided key element does not match the schema'
            : `One or more parameter values were invalid: Type mismatch for key ${attribute.name} expected: ${attribute.type} actual: ${typeOf(value)}`,
        );
      }
      if ((value.S ?? value.B ?? 'x').length === 0) {
        throw validation(
          `One or more parameter values are not valid. The AttributeValue for a key attribute cannot contain an empty ${value.S !== undefined ? 'string' : 'binary'} value. Key: ${attribute.name}`,
        );
      }
      key[attribute.name] = value;
    }
    if (what === 'key' && Object.keys(source).length !== Object.keys(key).length) {
      throw validation('The provided key element does not match the schema');
    }
    return storedItem(key);
  }

  keyString(key: Item): string {
    return this.keyNames.map((name) => JSON.stringify(key[name])).join('\u0000');
  }

  get(key: Item): Item | undefined {
    return this.items.get(this.keyString(key))?.item;
  }

  /** Stores `next` (undefined: deletes) and writes the stream record if the item changed. */
  write(key: Item, previous: Item | undefined, next: Item | undefined): void {
    const id = this.keyString(key);
    if (next) {
      const size = itemSize(next);
      if (size > 400 * 1024) throw validation('Item size has exceeded the maximum allowed size');
      const entry = this.items.get(id);
      if (entry) {
        entry.item = next;
        entry.size = size;
      } else {
        this.items.set(id, { item: next, size, hash: partitionHash(next[this.hashKey.name]!) });
        this.#ordered = undefined;
      }
    } else if (previous) {
      this.items.delete(id);
      this.#ordered = undefined;
    }
    if (equalItems(previous, next) || !this.stream) return;
    this.#sequence += 1;
    const view = this.stream.viewType;
    const image = (item: Item | undefined) => (item ? { ...item } : undefined);
    this.stream.records.push({
      eventID: `${this.name}-${this.#sequence}`,
      eventName: !previous ? 'INSERT' : !next ? 'REMOVE' : 'MODIFY',
      eventVersion: '1.1',
      eventSource: 'aws:dynamodb',
      awsRegion: REGION,
      dynamodb: {
        ApproximateCreationDateTime: Math.floor(Date.now() / 60_000) * 60,
        Keys: key,
        ...(next && (view === 'NEW_IMAGE' || view === 'NEW_AND_OLD_IMAGES') ? { NewImage: image(next) } : {}),
        ...(previous && (view === 'OLD_IMAGE' || view === 'NEW_AND_OLD_IMAGES') ? { OldImage: image(previous) } : {}),
        SequenceNumber: String(this.#sequence).padStart(21, '0'),
        SizeBytes: itemSize(key) + (next ? itemSize(next) : 0),
        StreamViewType: view,
      },
    });
  }

  /** DynamoDB Local's scan order: by partition hash, then sort key. */
  compare(a: Pick<StoredItem, 'item' | 'hash'>, b: Pick<StoredItem, 'item' | 'hash'>): number {
    const range = this.rangeKey?.name;
    return Buffer.compare(a.hash, b.hash) || (range ? compareScalars(a.item[range]!, b.item[range]!)! : 0);
  }

  /** Every item, in scan order. */
  ordered(): StoredItem[] {
    if (!this.#ordered) this.#ordered = [...this.items.values()].sort((a, b) => this.compare(a, b));
    return this.#ordered;
  }

  keySchema(): Array<{ AttributeName: string; KeyType: 'HASH' | 'RANGE' }> {
    return [
      { AttributeName: this.hashKey.name, KeyType: 'HASH' },
      ...(this.rangeKey ? [{ AttributeName: this.rangeKey.name, KeyType: 'RANGE' as const }] : []),
    ];
  }

  describe(): Record<string, unknown> {
    return {
      TableName: this.name,
      TableStatus: 'ACTIVE',
      TableArn: `arn:aws:dynamodb:${REGION}:${ACCOUNT}:table/${this.name}`,
      CreationDateTime: this.created / 1000,
      AttributeDefinitions: this.definitions,
      KeySchema: this.keySchema(),
      ItemCount: this.items.size,
      TableSizeBytes: [...this.items.values()].reduce((sum, { size }) => sum + size, 0),
      BillingModeSummary: { BillingMode: 'PAY_PER_REQUEST', LastUpdateToPayPerRequestDateTime: this.created / 1000 },
      ProvisionedThroughput: {
        LastIncreaseDateTime: 0,
        LastDecreaseDateTime: 0,
        ReadCapacityUnits: 0,
        WriteCapacityUnits: 0,
        NumberOfDecreasesToday: 0,
      },
      DeletionProtectionEnabled: false,
      ...(this.stream
        ? {
            StreamSpecification: { StreamEnabled: true, StreamViewType: this.stream.viewType },
            LatestStreamArn: this.stream.arn,
            LatestStreamLabel: this.stream.label,
          }
        : {}),
    };
  }
}

/**
 * A namespace's tables, and the streams of those it deleted. DynamoDB Local keeps a deleted table's
 * stream (listed, `DISABLED`, its records readable); the model does not keep them, so a request that
 * would reach one is not answered (see `DeleteTable`).
 */
class Tables extends Map<string, Table> {
  readonly deletedStreams: Array<{ readonly tableName: string; readonly arn: string }> = [];
  /** TransactWriteItems' client request tokens seen: the request each came with, and when (10 minutes). */
  readonly transactionTokens = new Map<string, { readonly request: string; readonly atMs: number }>();
}

/** How long a TransactWriteItems' ClientRequestToken makes it idempotent. */
const TRANSACTION_TOKEN_MS = 10 * 60_000;

// ---- requests ----

type Operation = (tables: Tables, input: Record<string, unknown>, namespace: string) => Record<string, unknown>;

/** Refuses any parameter the model does not implement, so that nothing is silently ignored. */
function accept(input: Record<string, unknown>, operation: string, allowed: readonly string[]): void {
  for (const [name, value] of Object.entries(input)) {
    if (value !== undefined && !allowed.includes(name)) throw new NotModelledError(`${operation}'s ${name}`);
  }
}

function only<T extends string>(value: unknown, name: string, allowed: readonly T[], fallback: T): T {
  if (value === undefined) return fallback;
  if (!allowed.includes(value as T)) throw new NotModelledError(`${name} ${String(value)}`);
  return value as T;
}

function tableOf(tables: Map<string, Table>, input: Record<string, unknown>): Table {
  const table = tables.get(String(input.TableName));
  if (!table) throw new DynamoDBError('ResourceNotFoundException', 'Cannot do operations on a non-existent table');
  return table;
}

interface Expressions {
  readonly condition?: Parsed<Condition>;
  readonly key?: Parsed<Condition>;
  readonly filter?: Parsed<Condition>;
  readonly update?: Parsed<ReturnType<typeof parseUpdate>['tree']>;
  readonly projection?: Parsed<Path[]>;
}

/**
 * The request's expressions, parsed, and its placeholders — checked as DynamoDB checks them: every name
 * and value an expression uses is given, every one given is used.
 */
function expressionsOf(input: Record<string, unknown>): { parsed: Expressions; placeholders: Placeholders } {
  const parsed: Expressions = {
    ...(input.ConditionExpression !== undefined
      ? { condition: parseCondition(String(input.ConditionExpression)) }
      : {}),
    ...(input.KeyConditionExpression !== undefined
      ? { key: parseCondition(String(input.KeyConditionExpression), 'KeyConditionExpression') }
      : {}),
    ...(input.FilterExpression !== undefined
      ? { filter: parseCondition(String(input.FilterExpression), 'FilterExpression') }
      : {}),
    ...(input.UpdateExpression !== undefined ? { update: parseUpdate(String(input.UpdateExpression)) } : {}),
    ...(input.ProjectionExpression !== undefined
      ? { projection: parseProjection(String(input.ProjectionExpression)) }
      : {}),
  };
  const names = (input.ExpressionAttributeNames ?? {}) as Record<string, string>;
  const values = (input.ExpressionAttributeValues ?? {}) as Record<string, AttributeValue>;
  // As DynamoDB (and Local) answer an empty map, whatever the expressions.
  if (input.ExpressionAttributeValues !== undefined && Object.keys(values).length === 0)
    throw validation('ExpressionAttributeValues must not be empty');
  if (input.ExpressionAttributeNames !== undefined && Object.keys(names).length === 0)
    throw validation('ExpressionAttributeNames must not be empty');
  const all = Object.values(parsed) as Parsed<unknown>[];
  if (all.length === 0) {
    if (input.ExpressionAttributeNames !== undefined)
      throw validation('ExpressionAttributeNames can only be specified when using expressions');
    if (input.ExpressionAttributeValues !== undefined)
      throw validation('ExpressionAttributeValues can only be specified when using expressions');
  }
  const usedNames = new Set(all.flatMap((expression) => [...expression.names]));
  const usedValues = new Set(all.flatMap((expression) => [...expression.values]));
  const unusedNames = Object.keys(names).filter((name) => !usedNames.has(name));
  if (unusedNames.length > 0) {
    throw validation(
      `Value provided in ExpressionAttributeNames unused in expressions: keys: {${unusedNames.join(', ')}}`,
    );
  }
  const unusedValues = Object.keys(values).filter((value) => !usedValues.has(value));
  if (unusedValues.length > 0) {
    throw validation(
      `Value provided in ExpressionAttributeValues unused in expressions: keys: {${unusedValues.join(', ')}}`,
    );
  }
  for (const [kind, expression] of Object.entries(parsed) as Array<[string, Parsed<unknown>]>) {
    const what = {
      condition: 'ConditionExpression',
      key: 'KeyConditionExpression',
      filter: 'FilterExpression',
      update: 'UpdateExpression',
      projection: 'ProjectionExpression',
    }[kind];
    for (const name of expression.names) {
      if (names[name] === undefined) {
        throw validation(
          `Invalid ${what}: An expression attribute name used in the document path is not defined; attribute name: ${name}`,
        );
      }
    }
    for (const value of expression.values) {
      if (values[value] === undefined) {
        throw validation(
          `Invalid ${what}: An expression attribute value used in expression is not defined; attribute value: ${value}`,
        );
      }
      typeOf(values[value]);
    }
  }
  return { parsed, placeholders: { names, values } };
}

const WRITE_PARAMETERS = [
  'TableName',
  'ConditionExpression',
  'ExpressionAttributeNames',
  'ExpressionAttributeValues',
  'ReturnValues',
  'ReturnValuesOnConditionCheckFailure',
];

/** The condition, checked on the item as it is; refused: DynamoDB's error, with the item if asked. */
function checkCondition(
  input: Record<string, unknown>,
  parsed: Expressions,
  placeholders: Placeholders,
  current: Item | undefined,
): void {
  const onFailure = only(
    input.ReturnValuesOnConditionCheckFailure,
    'ReturnValuesOnConditionCheckFailure',
    ['NONE', 'ALL_OLD'],
    'NONE',
  );
  if (!parsed.condition || evaluate(parsed.condition.tree, current, placeholders)) return;
  throw new DynamoDBError(
    'ConditionalCheckFailedException',
    'The conditional request failed',
    onFailure === 'ALL_OLD' && current ? { Item: current } : {},
  );
}

const OPERATIONS: Record<string, Operation> = {
  CreateTable(tables, input) {
    accept(input, 'CreateTable', [
      'TableName',
      'AttributeDefinitions',
      'KeySchema',
      'BillingMode',
      'StreamSpecification',
    ]);
    const name = String(input.TableName);
    if (tables.has(name)) throw new DynamoDBError('ResourceInUseException', `Cannot create preexisting table`);
    const definitions = input.AttributeDefinitions as Array<{ AttributeName: string; AttributeType: 'S' | 'N' | 'B' }>;
    const schema = input.KeySchema as Array<{ AttributeName: string; KeyType: 'HASH' | 'RANGE' }>;
    const key = (type: 'HASH' | 'RANGE'): KeyAttribute | undefined => {
      const element = schema.find((k) => k.KeyType === type);
      if (!element) return undefined;
      const definition = definitions.find((d) => d.AttributeName === element.AttributeName);
      if (!definition)
        throw validation(
          'One or more parameter values were invalid: Some index key attributes are not defined in AttributeDefinitions',
        );
      return { name: element.AttributeName, type: definition.AttributeType };
    };
    const stream = input.StreamSpecification as { StreamEnabled?: boolean; StreamViewType?: string } | undefined;
    const table = new Table(
      name,
      key('HASH')!,
      key('RANGE'),
      definitions,
      stream?.StreamEnabled ? stream.StreamViewType : undefined,
    );
    tables.set(name, table);
    return { TableDescription: table.describe() };
  },

  DescribeTable(tables, input) {
    accept(input, 'DescribeTable', ['TableName']);
    const table = tables.get(String(input.TableName));
    if (!table) throw new DynamoDBError('ResourceNotFoundException', `Cannot do operations on a non-existent table`);
    return { Table: table.describe() };
  },

  DeleteTable(tables, input) {
    accept(input, 'DeleteTable', ['TableName']);
    const table = tableOf(tables, input);
    // DynamoDB Local deletes at once, and describes the table as it was (ACTIVE, its items counted).
    tables.delete(table.name);
    if (table.stream) tables.deletedStreams.push({ tableName: table.name, arn: table.stream.arn });
    return { TableDescription: table.describe() };
  },

  ListTables(tables, input) {
    accept(input, 'ListTables', []);
    return { TableNames: [...tables.keys()].sort() };
  },

  UpdateTimeToLive(tables, input) {
    accept(input, 'UpdateTimeToLive', ['TableName', 'TimeToLiveSpecification']);
    const table = tableOf(tables, input);
    const specification = input.TimeToLiveSpecification as { AttributeName: string; Enabled: boolean };
    // Recorded only: items past their TTL are never deleted (see docs/testing.md).
    table.ttl = { attribute: specification.AttributeName, enabled: specification.Enabled };
    return { TimeToLiveSpecification: specification };
  },

  GetItem(tables, input) {
    accept(input, 'GetItem', [
      'TableName',
      'Key',
      'ConsistentRead',
      'ProjectionExpression',
      'ExpressionAttributeNames',
    ]);
    const table = tableOf(tables, input);
    const { parsed, placeholders } = expressionsOf(input);
    const item = table.get(table.keyOf(input.Key as Item, 'key'));
    if (!item) return {};
    return { Item: parsed.projection ? project(item, parsed.projection.tree, placeholders) : item };
  },

  PutItem(tables, input) {
    accept(input, 'PutItem', [...WRITE_PARAMETERS, 'Item']);
    const table = tableOf(tables, input);
    const returnValues = only(input.ReturnValues, 'ReturnValues', ['NONE', 'ALL_OLD'], 'NONE');
    const { parsed, placeholders } = expressionsOf(input);
    const item = storedItem(input.Item as Item);
    const key = table.keyOf(item, 'item');
    const current = table.get(key);
    checkCondition(input, parsed, placeholders, current);
    table.write(key, current, item);
    return returnValues === 'ALL_OLD' && current ? { Attributes: current } : {};
  },

  UpdateItem(tables, input) {
    accept(input, 'UpdateItem', [...WRITE_PARAMETERS, 'Key', 'UpdateExpression']);
    const table = tableOf(tables, input);
    const returnValues = only(input.ReturnValues, 'ReturnValues', ['NONE', 'ALL_NEW', 'ALL_OLD'], 'NONE');
    const { parsed, placeholders } = expressionsOf(input);
    if (!parsed.update) throw new NotModelledError('UpdateItem without an UpdateExpression');
    const key = table.keyOf(input.Key as Item, 'key');
    const current = table.get(key);
    checkCondition(input, parsed, placeholders, current);
    const next = applyUpdate(parsed.update.tree, current ?? key, placeholders, table.keyNames);
    table.write(key, current, { ...next, ...key });
    if (returnValues === 'ALL_NEW') return { Attributes: { ...next, ...key } };
    return returnValues === 'ALL_OLD' && current ? { Attributes: current } : {};
  },

  DeleteItem(tables, input) {
    accept(input, 'DeleteItem', [...WRITE_PARAMETERS, 'Key']);
    const table = tableOf(tables, input);
    const returnValues = only(input.ReturnValues, 'ReturnValues', ['NONE', 'ALL_OLD'], 'NONE');
    const { parsed, placeholders } = expressionsOf(input);
    const key = table.keyOf(input.Key as Item, 'key');
    const current = table.get(key);
    checkCondition(input, parsed, placeholders, current);
    table.write(key, current, undefined);
    // DynamoDB Local's own quirk (the service does not do this): deleting an item that is not there
    // answers with the capacity it consumed, asked for or not. Found by the cross-check (erase, seed
    // 10000130: erase deleted an invoice already gone).
    if (!current) return { ConsumedCapacity: { TableName: table.name, CapacityUnits: 1 } };
    return returnValues === 'ALL_OLD' ? { Attributes: current } : {};
  },

  /**
   * All or none (Put, Update, Delete and ConditionCheck items): every item's condition is checked on the
   * items as they are, and only if all hold are the writes made, each with its stream record. Refused, it
   * answers as DynamoDB Local does: every item's reason in order (`None` for one that held), the item for a
   * failed condition that asked `ALL_OLD`, and the codes in the message.
   */
  TransactWriteItems(tables, input) {
    accept(input, 'TransactWriteItems', ['TransactItems', 'ClientRequestToken']);
    // The SDK sends a token with every transaction (one it makes when none is given), the same token on each
    // of its own retries: within 10 minutes the same token and request succeed again and change nothing; the
    // same token with another request is refused (as DynamoDB Local answers both).
    const token = input.ClientRequestToken === undefined ? undefined : String(input.ClientRequestToken);
    const request = JSON.stringify(input.TransactItems);
    const seen = token === undefined ? undefined : tables.transactionTokens.get(token);
    if (seen && Date.now() - seen.atMs < TRANSACTION_TOKEN_MS) {
      if (seen.request !== request) throw new DynamoDBError('IdempotentParameterMismatchException', '');
      return {};
    }
    const items = (input.TransactItems ?? []) as Array<Record<string, Record<string, unknown>>>;
    if (items.length === 0 || items.length > 100) {
      throw validation('Member must have length less than or equal to 100 and greater than or equal to 1');
    }
    const planned = items.map((entry) => {
      const kinds = Object.keys(entry);
      if (kinds.length !== 1) throw new NotModelledError(`a transaction item of ${kinds.length} kinds`);
      const kind = kinds[0]!;
      const request = entry[kind]!;
      const allowed = [
        ...WRITE_PARAMETERS.filter((name) => name !== 'ReturnValues'),
        'Key',
        'Item',
        'UpdateExpression',
      ];
      accept(request, `TransactWriteItems' ${kind}`, allowed);
      const table = tableOf(tables, request);
      const { parsed, placeholders } = expressionsOf(request);
      const onFailure = only(
        request.ReturnValuesOnConditionCheckFailure,
        'ReturnValuesOnConditionCheckFailure',
        ['NONE', 'ALL_OLD'],
        'NONE',
      );
      let key: Item;
      let next: (current: Item | undefined) => Item | undefined;
      switch (kind) {
        case 'Put': {
          const item = storedItem(request.Item as Item);
          key = table.keyOf(item, 'item');
          next = () => item;
          break;
        }
        case 'Update': {
          if (!parsed.update) throw new NotModelledError('an Update without an UpdateExpression');
          const update = parsed.update;
          key = table.keyOf(request.Key as Item, 'key');
          next = (current) => ({ ...applyUpdate(update.tree, current ?? key, placeholders, table.keyNames), ...key });
          break;
        }
        case 'Delete':
          key = table.keyOf(request.Key as Item, 'key');
          next = () => undefined;
          break;
        case 'ConditionCheck':
          if (!parsed.condition) throw validation('The ConditionCheck item must have a ConditionExpression');
          key = table.keyOf(request.Key as Item, 'key');
          next = (current) => current;
          break;
        default:
          throw new NotModelledError(`a transaction item ${kind}`);
      }
      const current = table.get(key);
      const passed = !parsed.condition || evaluate(parsed.condition.tree, current, placeholders);
      return { table, key, id: `${table.name}/${table.keyString(key)}`, current, next, passed, onFailure };
    });
    if (new Set(planned.map(({ id }) => id)).size !== planned.length) {
      throw validation('Transaction request cannot include multiple operations on one item');
    }
    if (planned.some(({ passed }) => !passed)) {
      const reasons = planned.map(({ passed, current, onFailure }) =>
        passed
          ? { Code: 'None' }
          : {
              ...(onFailure === 'ALL_OLD' && current ? { Item: current } : {}),
              Code: 'ConditionalCheckFailed',
              Message: 'The conditional request failed',
            },
      );
      throw new DynamoDBError(
        'TransactionCanceledException',
        `Transaction cancelled, please refer cancellation reasons for specific reasons [${reasons.map(({ Code }) => Code).join(', ')}]`,
        { CancellationReasons: reasons },
      );
    }
    for (const { table, key, current, next } of planned) table.write(key, current, next(current));
    if (token !== undefined) tables.transactionTokens.set(token, { request, atMs: Date.now() });
    return {};
  },

  Query(tables, input) {
    accept(input, 'Query', [...READ_PARAMETERS, 'KeyConditionExpression', 'ScanIndexForward']);
    const table = tableOf(tables, input);
    const { parsed, placeholders } = expressionsOf(input);
    if (!parsed.key)
      throw validation(
        'Either the KeyConditions or KeyConditionExpression parameter must be specified in the request.',
      );
    const { partition, range } = keyCondition(table, parsed.key.tree, placeholders);
    let candidates = table
      .ordered()
      .filter(({ item }) => compareScalars(item[table.hashKey.name]!, partition) === 0)
      .filter(({ item }) => !range || evaluate(range, item, placeholders));
    if (input.ScanIndexForward === false) candidates = candidates.reverse();
    return page(table, candidates, input, parsed, placeholders);
  },

  Scan(tables, input) {
    accept(input, 'Scan', [...READ_PARAMETERS, 'Segment', 'TotalSegments']);
    const table = tableOf(tables, input);
    const { parsed, placeholders } = expressionsOf(input);
    let candidates = table.ordered();
    if (input.Segment !== undefined || input.TotalSegments !== undefined) {
      const total = Number(input.TotalSegments);
      const segment = Number(input.Segment);
      if (!(total >= 1 && total <= 1_000_000) || !(segment >= 0 && segment < total)) {
        throw validation(`The Segment parameter is invalid: ${segment} of ${total}`);
      }
      const [begin, end] = segmentRange(segment, total);
      candidates = candidates.filter(({ hash }) => Buffer.compare(hash, begin) >= 0 && Buffer.compare(hash, end) <= 0);
    }
    return page(table, candidates, input, parsed, placeholders);
  },

  // ---- DynamoDB Streams ----

  ListStreams(tables, input) {
    accept(input, 'ListStreams', ['TableName']);
    if (tables.deletedStreams.some(({ tableName }) => input.TableName === undefined || tableName === input.TableName)) {
      throw new NotModelledError('ListStreams that would list the stream of a deleted table');
    }
    const streams = [...tables.values()]
      .filter((table) => table.stream && (input.TableName === undefined || table.name === input.TableName))
      .map((table) => ({ StreamArn: table.stream!.arn, TableName: table.name, StreamLabel: table.stream!.label }));
    return { Streams: streams };
  },

  DescribeStream(tables, input) {
    accept(input, 'DescribeStream', ['StreamArn']);
    const table = streamTable(tables, String(input.StreamArn));
    const stream = table.stream!;
    return {
      StreamDescription: {
        StreamArn: stream.arn,
        StreamLabel: stream.label,
        StreamStatus: 'ENABLED',
        StreamViewType: stream.viewType,
        CreationRequestDateTime: table.created / 1000,
        TableName: table.name,
        KeySchema: table.keySchema(),
        Shards: [{ ShardId: stream.shardId, SequenceNumberRange: { StartingSequenceNumber: '1'.padStart(21, '0') } }],
      },
    };
  },

  GetShardIterator(tables, input) {
    accept(input, 'GetShardIterator', ['StreamArn', 'ShardId', 'ShardIteratorType', 'SequenceNumber']);
    const table = streamTable(tables, String(input.StreamArn));
    const stream = table.stream!;
    if (input.ShardId !== stream.shardId) {
      throw new DynamoDBError('ResourceNotFoundException', `Requested resource not found: Shard does not exist`);
    }
    const records = stream.records;
    const at = (sequence: unknown) => {
      const index = records.findIndex(
        (record) => record.dynamodb.SequenceNumber === String(sequence).padStart(21, '0'),
      );
      if (index < 0) throw validation(`Invalid SequenceNumber ${String(sequence)} for shard ${stream.shardId}`);
      return index;
    };
    const position = {
      TRIM_HORIZON: () => 0,
      LATEST: () => records.length,
      AT_SEQUENCE_NUMBER: () => at(input.SequenceNumber),
      AFTER_SEQUENCE_NUMBER: () => at(input.SequenceNumber) + 1,
    }[String(input.ShardIteratorType) as 'LATEST'];
    if (!position) throw validation(`Invalid ShardIteratorType ${String(input.ShardIteratorType)}`);
    return { ShardIterator: iterator(stream, position()) };
  },

  GetRecords(tables, input) {
    accept(input, 'GetRecords', ['ShardIterator', 'Limit']);
    const [arn, shardId, from] = String(input.ShardIterator).split('|');
    const stream = streamTable(tables, arn!).stream!;
    if (shardId !== stream.shardId) throw validation('Invalid ShardIterator');
    const limit = input.Limit === undefined ? 1000 : Number(input.Limit);
    const records = stream.records.slice(Number(from), Number(from) + limit);
    return { Records: records, NextShardIterator: iterator(stream, Number(from) + records.length) };
  },
};

const READ_PARAMETERS = [
  'TableName',
  'FilterExpression',
  'ProjectionExpression',
  'ExpressionAttributeNames',
  'ExpressionAttributeValues',
  'ConsistentRead',
  'ExclusiveStartKey',
  'ReturnConsumedCapacity',
  'Select',
];

function streamTable(tables: Tables, arn: string): Table {
  if (tables.deletedStreams.some((deleted) => deleted.arn === arn)) {
    throw new NotModelledError('the stream of a deleted table');
  }
  const table = [...tables.values()].find((candidate) => candidate.stream?.arn === arn);
  if (!table)
    throw new DynamoDBError('ResourceNotFoundException', `Requested resource not found: Stream: ${arn} not found`);
  return table;
}

function iterator(stream: Stream, position: number): string {
  return `${stream.arn}|${stream.shardId}|${position}`;
}

/**
 * A Query's key condition: the partition key equal to a value, optionally AND one condition on the
 * sort key (=, <, <=, >, >=, BETWEEN, begins_with).
 */
function keyCondition(
  table: Table,
  condition: Condition,
  placeholders: Placeholders,
): { partition: AttributeValue; range: Condition | undefined } {
  const parts = condition.kind === 'and' ? [condition.left, condition.right] : [condition];
  let partition: AttributeValue | undefined;
  let range: Condition | undefined;
  const attributeOf = (path: Path) => resolvePath(path, placeholders).join('.');
  for (const part of parts) {
    if (
      part.kind === 'compare' &&
      part.op === '=' &&
      part.left.kind === 'path' &&
      part.right.kind === 'value' &&
      attributeOf(part.left.path) === table.hashKey.name
    ) {
      partition = placeholders.values[part.right.token];
      continue;
    }
    const path =
      part.kind === 'compare' && part.left.kind === 'path'
        ? part.left.path
        : part.kind === 'between' && part.value.kind === 'path'
          ? part.value.path
          : part.kind === 'begins_with'
            ? part.path
            : undefined;
    if (
      !path ||
      !table.rangeKey ||
      attributeOf(path) !== table.rangeKey.name ||
      (part.kind === 'compare' && part.op === '<>')
    ) {
      throw validation('Query key condition not supported');
    }
    range = part;
  }
  if (!partition) throw validation(`Query condition missed key schema element: ${table.hashKey.name}`);
  return { partition, range };
}

/**
 * A read's `Select`: all attributes (the default without a projection), the projection's (the default
 * with one), or the count alone — the items are read and filtered as for the others, and left out of
 * the answer. `ALL_PROJECTED_ATTRIBUTES` (an index's) and a `Select` that disagrees with the projection
 * are not modelled.
 */
function selectOf(
  input: Record<string, unknown>,
  parsed: Expressions,
): 'ALL_ATTRIBUTES' | 'SPECIFIC_ATTRIBUTES' | 'COUNT' {
  const implied = parsed.projection ? 'SPECIFIC_ATTRIBUTES' : 'ALL_ATTRIBUTES';
  if (input.Select === undefined) return implied;
  if (input.Select === 'COUNT' && !parsed.projection) return 'COUNT';
  if (input.Select === implied) return implied;
  throw new NotModelledError(
    `Select ${String(input.Select)}${parsed.projection ? ' with a ProjectionExpression' : ''}`,
  );
}

/** DynamoDB Local's limit on the data one Query or Scan page reads. */
const PAGE_BYTES = 1024 * 1024;

/**
 * One page, as DynamoDB Local reads it: from past `ExclusiveStartKey`, item by item — filtered and
 * projected — until the items read reach 1 MB (the one that reaches it is read, and ends the page,
 * whose `LastEvaluatedKey` it is). Capacity units: the items read, 4 KB a unit, half for an eventually
 * consistent read.
 */
function page(
  table: Table,
  candidates: readonly StoredItem[],
  input: Record<string, unknown>,
  parsed: Expressions,
  placeholders: Placeholders,
): Record<string, unknown> {
  const capacity = only(input.ReturnConsumedCapacity, 'ReturnConsumedCapacity', ['NONE', 'TOTAL'], 'NONE');
  const select = selectOf(input, parsed);
  let start = 0;
  if (input.ExclusiveStartKey !== undefined) {
    // Past the key's place in the order, whether or not its item is still there.
    const after = table.keyOf(input.ExclusiveStartKey as Item, 'key');
    const place = { item: after, hash: partitionHash(after[table.hashKey.name]!) };
    const direction = input.ScanIndexForward === false ? -1 : 1;
    start = candidates.findIndex((candidate) => direction * table.compare(candidate, place) > 0);
    if (start < 0) start = candidates.length;
  }
  const items: Item[] = [];
  let bytes = 0;
  let scanned = 0;
  let last: Item | undefined;
  for (let i = start; i < candidates.length; i++) {
    const { item, size } = candidates[i]!;
    scanned += 1;
    if (!parsed.filter || evaluate(parsed.filter.tree, item, placeholders)) {
      items.push(parsed.projection ? project(item, parsed.projection.tree, placeholders) : item);
    }
    if (bytes + size >= PAGE_BYTES) {
      bytes += size;
      if (i + 1 < candidates.length) last = item;
      break;
    }
    bytes += size;
  }
  const consistent = input.ConsistentRead === true;
  const units = Math.ceil(bytes / 4096) / (consistent ? 1 : 2);
  return {
    ...(select === 'COUNT' ? {} : { Items: items }),
    Count: items.length,
    ScannedCount: scanned,
    ...(last ? { LastEvaluatedKey: Object.fromEntries(table.keyNames.map((name) => [name, last[name]!])) } : {}),
    ...(capacity === 'TOTAL' ? { ConsumedCapacity: { TableName: table.name, CapacityUnits: units } } : {}),
  };
}
