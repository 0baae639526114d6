import { randomBytes } from 'node:crypto';
import {
  type AttributeValue,
  CreateTableCommand,
  DeleteItemCommand,
  DeleteTableCommand,
  DescribeTableCommand,
  DynamoDBClient,
  GetItemCommand,
  ListTablesCommand,
  PutItemCommand,
  QueryCommand,
  ScanCommand,
  TransactWriteItemsCommand,
  UpdateItemCommand,
  UpdateTimeToLiveCommand,
} from '@aws-sdk/client-dynamodb';
import { TABLES } from '../../app/tables';
import { freePort } from '../../lib/local/free-port';
import { createDynamoDBClient } from '../../lib/store/client';
import { createTableInput } from '../../lib/store/create-tables';
import { IDEMPOTENCY_TABLE } from '../../lib/store/tables';
import { canonical, crossCheckSchedule } from './cross-check';
import {
  divertDefaultHandler,
  type ExploreStore,
  MEMORY_ENDPOINT,
  MemoryDynamoDB,
  memoryRequestHandler,
  startExploreStore,
} from './engine';
import { NotModelledError } from './engine/attribute-values';
import { SCENARIOS } from './scenarios';
import type { ScheduleOptions } from './schedule';
import { createExploreWorld, type ExploreWorld } from './world';

let memory: ExploreStore;

beforeAll(async () => {
  memory = await startExploreStore('memory');
});

afterAll(() => memory.stop());

/**
 * Per scenario: its base schedule, two forced faults on it, two random schedules (three until the CI run
 * neared its 15 minutes; `npm run explore -- --cross-check` runs any number on both engines).
 */
const SCHEDULES: ReadonlyArray<ScheduleOptions> = Object.keys(SCENARIOS).flatMap((scenario, index) => {
  const base = 1_000_000 * (index + 1);
  return [
    { scenario, seed: base, faultFree: true },
    { scenario, seed: base, at: [{ step: 1, fault: 'crash' as const }] },
    { scenario, seed: base, at: [{ step: 2, fault: 'lose_answer' as const }] },
    { scenario, seed: base + 1 },
    { scenario, seed: base + 2 },
  ];
});

describe('the in-memory engine, cross-checked against DynamoDB Local on the same schedules', () => {
  let worlds: { local: ExploreWorld; memory: ExploreWorld };

  beforeAll(async () => {
    worlds = {
      local: await createExploreWorld(process.env.DYNAMODB_ENDPOINT!, { record: true }),
      memory: await createExploreWorld(memory.connection, { record: true }),
    };
  });

  afterAll(() => {
    worlds.local.destroy();
    worlds.memory.destroy();
  });

  it(`${SCHEDULES.length} schedules over every scenario: the same requests, outcomes, answers and tables`, async () => {
    const differences: string[] = [];
    let requests = 0;
    for (const schedule of SCHEDULES) {
      const { difference } = await crossCheckSchedule(worlds, schedule);
      if (difference) {
        differences.push(
          `${JSON.stringify(schedule)} line ${difference.index}:\n${difference.local}\n${difference.memory}`,
        );
      }
    }
    requests = worlds.local.exchanges!.length;

    expect(differences).toEqual([]);
    expect(memory.unmodelled).toEqual([]);
    // The comparison had something to compare: every schedule sent requests.
    expect(requests).toBeGreaterThan(SCHEDULES.length * 10);
    // With half the CPU: on CI's two cores the other Jest worker starts test/infra/stack.test.ts beside it
    // (the two largest files go first).
  }, 240_000);
});

/**
 * Each condition the code writes with (lib/idempotency/protocol — every one in lib/ —, app/domain,
 * app/payments), once passing and once failing, sent to DynamoDB Local and to
 * the in-memory engine: the same outcome (the write, or ConditionalCheckFailedException with the same
 * item) and the same item after.
 */
/** A client of DynamoDB Local and one of the in-memory engine, in a namespace (access key) of their own. */
function clientPair(): { local: DynamoDBClient; memory: DynamoDBClient } {
  const credentials = { accessKeyId: `conformance${randomBytes(6).toString('hex')}`, secretAccessKey: 'x' };
  return {
    local: new DynamoDBClient({ endpoint: process.env.DYNAMODB_ENDPOINT, region: 'us-east-1', credentials }),
    memory: new DynamoDBClient({
      endpoint: memory.connection.endpoint,
      requestHandler: memory.connection.requestHandler,
      region: 'us-east-1',
      credentials,
    }),
  };
}

describe('condition expressions: the in-memory engine answers as DynamoDB Local does', () => {
  const clients: { local?: DynamoDBClient; memory?: DynamoDBClient } = {};
  const TABLE = 'conformance';

  beforeAll(async () => {
    Object.assign(clients, clientPair());
    for (const client of [clients.local!, clients.memory!]) {
      await client.send(
        new CreateTableCommand({
          TableName: TABLE,
          BillingMode: 'PAY_PER_REQUEST',
          AttributeDefinitions: [{ AttributeName: 'id', AttributeType: 'S' }],
          KeySchema: [{ AttributeName: 'id', KeyType: 'HASH' }],
          StreamSpecification: { StreamEnabled: true, StreamViewType: 'NEW_IMAGE' },
        }),
      );
    }
  });

  afterAll(() => {
    clients.local?.destroy();
    clients.memory?.destroy();
  });

  const S = (value: string): AttributeValue => ({ S: value });
  const N = (value: string): AttributeValue => ({ N: value });
  const record: Record<string, AttributeValue> = {
    status: S('INPROGRESS'),
    claim_id: S('c1'),
    in_progress_expiration: N('1796470542370'),
    expiration: N('1796556912'),
    validation: S('v1'),
    attempt: N('1'),
    call: S('{"key":"k1"}'),
    intent_owner: S('refund#owner'),
    stalled_claim: S('c1'),
    data: { M: { receipt: S('{"refund_id":"re_1"}'), replayed: { BOOL: false } } },
  };
  const names = (...attributes: string[]) => Object.fromEntries(attributes.map((name) => [`#${name}`, name]));

  /** A conditional write: the item it meets (or none), the request, and whether the condition holds. */
  type Case = readonly [
    label: string,
    existing: Record<string, AttributeValue> | undefined,
    write: { command: 'PutItem' | 'UpdateItem' | 'DeleteItem'; input: Record<string, unknown> },
    passes: boolean,
  ];

  const claim = (now: string): Case[2] => ({
    command: 'PutItem',
    input: {
      Item: { status: S('INPROGRESS'), claim_id: S('c2') },
      ConditionExpression: 'attribute_not_exists(#id) OR #expiry < :now',
      ExpressionAttributeNames: { '#id': 'id', '#expiry': 'expiration' },
      ExpressionAttributeValues: { ':now': N(now) },
      ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
    },
  });
  const takeover = (nowMs: string, lockS: string, from = 'c1'): Case[2] => ({
    command: 'UpdateItem',
    input: {
      UpdateExpression: 'SET #claim = :id, #lock = :lock ADD #attempt :one',
      ConditionExpression:
        '#claim = :from AND #status = :inprogress AND #lock < :now_ms AND #expiry >= :lock_s AND #validation = :validation',
      ExpressionAttributeNames: {
        '#claim': 'claim_id',
        '#status': 'status',
        '#lock': 'in_progress_expiration',
        '#expiry': 'expiration',
        '#attempt': 'attempt',
        '#validation': 'validation',
      },
      ExpressionAttributeValues: {
        ':from': S(from),
        ':id': S('c2'),
        ':inprogress': S('INPROGRESS'),
        ':now_ms': N(nowMs),
        ':lock': N('1796470600000'),
        ':lock_s': N(lockS),
        ':one': N('1'),
        ':validation': S('v1'),
      },
      ReturnValues: 'ALL_NEW',
      ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
    },
  });
  const onClaim = (
    command: 'UpdateItem' | 'DeleteItem',
    condition: string,
    values: Record<string, AttributeValue>,
  ) => ({
    command,
    input: {
      ...(command === 'UpdateItem' ? { UpdateExpression: 'SET #lock = :until' } : {}),
      ConditionExpression: condition,
      ExpressionAttributeNames: {
        ...Object.fromEntries([...condition.matchAll(/#(\w+)/g)].map(([token, name]) => [token, ATTRIBUTE[name!]!])),
        ...(command === 'UpdateItem' ? { '#lock': 'in_progress_expiration' } : {}),
      },
      ...(Object.keys(values).length > 0 || command === 'UpdateItem'
        ? {
            ExpressionAttributeValues: {
              ...values,
              ...(command === 'UpdateItem' ? { ':until': N('1796470542999') } : {}),
            },
          }
        : {}),
    },
  });
  const ATTRIBUTE: Record<string, string> = {
    claim: 'claim_id',
    status: 'status',
    owner: 'intent_owner',
    expiry: 'expiration',
    lock: 'in_progress_expiration',
    stalled: 'stalled_claim',
    replaced: 'replaced_window',
    key: 'id',
    by0: 'created_by',
    by1: 'refunded_by',
  };

  const CASES: readonly Case[] = [
    ['claim: no record', undefined, claim('1796470542.37'), true],
    ['claim: an expired record (expiry < now, a decimal now)', record, claim('1796556912.001'), true],
    ['claim: a live record (returns it)', record, claim('1796556911.999'), false],
    ['claim: expiry = now is not expired', record, claim('1796556912'), false],
    [
      'takeover: the claim read, lock ended, TTL after the new lock',
      record,
      takeover('1796470542371', '1796556912'),
      true,
    ],
    ['takeover: the lock ends exactly now (not ended)', record, takeover('1796470542370', '1796470600'), false],
    ['takeover: the new lock would outlive the TTL', record, takeover('1796470542371', '1796556913'), false],
    ['takeover: another claim', record, takeover('1796470542371', '1796470600', 'c9'), false],
    ['takeover: no record', undefined, takeover('1796470542371', '1796470600'), false],
    ['store/park: own claim', record, onClaim('UpdateItem', '#claim = :claim', { ':claim': S('c1') }), true],
    ['store/park: a lost claim', record, onClaim('UpdateItem', '#claim = :claim', { ':claim': S('c0') }), false],
    [
      'release: own claim, in progress',
      record,
      onClaim('DeleteItem', '#claim = :claim AND #status = :inprogress', {
        ':claim': S('c1'),
        ':inprogress': S('INPROGRESS'),
      }),
      true,
    ],
    [
      'release: completed meanwhile',
      { ...record, status: S('COMPLETED') },
      onClaim('DeleteItem', '#claim = :claim AND #status = :inprogress', {
        ':claim': S('c1'),
        ':inprogress': S('INPROGRESS'),
      }),
      false,
    ],
    [
      'intent: still held by its holder and claim',
      record,
      onClaim('DeleteItem', '#owner = :from AND #claim = :fromClaim', {
        ':from': S('refund#owner'),
        ':fromClaim': S('c1'),
      }),
      true,
    ],
    [
      'intent: held by another holder',
      record,
      onClaim('DeleteItem', '#owner = :from AND #claim = :fromClaim', {
        ':from': S('refund#other'),
        ':fromClaim': S('c1'),
      }),
      false,
    ],
    [
      'intent: held without a claim',
      { intent_owner: S('refund#owner') },
      onClaim('DeleteItem', '#owner = :from AND attribute_not_exists(#claim)', { ':from': S('refund#owner') }),
      true,
    ],
    [
      'intent: a claim where none was read',
      record,
      onClaim('DeleteItem', '#owner = :from AND attribute_not_exists(#claim)', { ':from': S('refund#owner') }),
      false,
    ],
    ...(
      [
        ['a marker that expires no later', '1796556913', true, true],
        ['a marker that outlives it (review 21, R21-2)', '1796556912', true, false],
        ['a marker remembering no window that outlives it (review 22, R22-2)', '1796556912', false, true],
      ] as const
    ).map(
      ([what, expiry, remembers, passes]): Case => [
        `intent created over ${what} (createIntent)`,
        {
          tenant: S('t'),
          tool: S('refund'),
          expiration: N('1796556913'),
          ...(remembers
            ? { replaced_window: { M: { end: N('1796470000'), call: S('refund#a@i0'), key: S('dka') } } }
            : {}),
        },
        {
          command: 'UpdateItem',
          input: {
            UpdateExpression: 'SET #holder = :holder, #expiry = :expiry',
            ConditionExpression:
              'attribute_not_exists(#holder) AND attribute_not_exists(#status) AND (attribute_not_exists(#replaced) OR (#replaced.#end < :asked AND (attribute_not_exists(#expiry) OR #expiry <= :expiry)))',
            ExpressionAttributeNames: {
              '#holder': 'intent_owner',
              '#status': 'status',
              '#replaced': 'replaced_window',
              '#end': 'end',
              '#expiry': 'expiration',
            },
            ExpressionAttributeValues: {
              ':holder': S('refund#owner'),
              ':asked': N('1796470001.5'),
              ':expiry': N(expiry),
            },
            ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
          },
        },
        passes,
      ],
    ),
    ...(['refund#owner', 'refund#other'] as const).map(
      (from): Case => [
        `intent erased to a marker of no tenant (eraseIntentItem): held by ${from === 'refund#owner' ? 'the holder read' : 'another holder'}`,
        {
          ...record,
          tenant: S('t'),
          tool: S('refund'),
          call_id: S('refund#owner@i1'),
          downstream_key: S('dk'),
          window_end: N('1796470600'),
          intent_runners: { SS: ['refund#owner@i1', 'refund#r@i2'] },
          replaced_window: { M: { end: N('1796470000'), call: S('refund#a@i0'), key: S('dka') } },
        },
        {
          command: 'UpdateItem',
          input: {
            UpdateExpression:
              'SET #replaced = :window REMOVE #holder, #claim, #call, #downstream, #end, #runners, #tenant, #tool',
            ConditionExpression: '#holder = :from AND #claim = :fromClaim',
            ExpressionAttributeNames: {
              '#holder': 'intent_owner',
              '#claim': 'claim_id',
              '#replaced': 'replaced_window',
              '#call': 'call_id',
              '#downstream': 'downstream_key',
              '#end': 'window_end',
              '#runners': 'intent_runners',
              '#tenant': 'tenant',
              '#tool': 'tool',
            },
            ExpressionAttributeValues: {
              ':from': S(from),
              ':fromClaim': S('c1'),
              ':window': {
                M: {
                  end: N('1796470543'),
                  call: S('refund#owner@i1'),
                  key: S('dk'),
                  before: N('1796470000'),
                  prior: { M: { end: N('1796470000'), call: S('refund#a@i0'), key: S('dka') } },
                },
              },
            },
            ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
          },
        },
        from === 'refund#owner',
      ],
    ),
    [
      'stall: abandoned on the claim read',
      record,
      onClaim('UpdateItem', '#status = :inProgress AND #claim = :claim AND #lock < :now AND #expiry >= :nowS', {
        ':inProgress': S('INPROGRESS'),
        ':claim': S('c1'),
        ':now': N('1796470542371'),
        ':nowS': N('1796470542'),
      }),
      true,
    ],
    [
      'stall: past the TTL',
      record,
      onClaim('UpdateItem', '#status = :inProgress AND #claim = :claim AND #lock < :now AND #expiry >= :nowS', {
        ':inProgress': S('INPROGRESS'),
        ':claim': S('c1'),
        ':now': N('1796556913000'),
        ':nowS': N('1796556913'),
      }),
      false,
    ],
    [
      'erase: a completed record',
      { ...record, status: S('COMPLETED') },
      onClaim('UpdateItem', '#status = :completed', { ':completed': S('COMPLETED') }),
      true,
    ],
    [
      'erase: a record in flight',
      record,
      onClaim('UpdateItem', '#status = :completed', { ':completed': S('COMPLETED') }),
      false,
    ],
    [
      'erase: a stalled record on its claim',
      record,
      onClaim('UpdateItem', '#status = :inProgress AND #claim = :claim AND #stalled = :claim', {
        ':inProgress': S('INPROGRESS'),
        ':claim': S('c1'),
      }),
      true,
    ],
    [
      'erase: taken over since it stalled',
      { ...record, claim_id: S('c2') },
      onClaim('UpdateItem', '#status = :inProgress AND #claim = :claim AND #stalled = :claim', {
        ':inProgress': S('INPROGRESS'),
        ':claim': S('c1'),
      }),
      false,
    ],
    ['erase: an expired record', record, onClaim('DeleteItem', '#expiry < :now', { ':now': N('1796556912.5') }), true],
    // Erase's delete of an intent, conditioned on what made it deletable as read (review 22, R22-3).
    ...(
      [
        ['a marker remembering no window', false, '1796470000', true],
        ['a marker now remembering a window', true, '1796470000', false],
        ['a marker remembering a window, past its TTL', true, '1796556913.5', true],
      ] as const
    ).map(
      ([what, remembers, now, passes]): Case => [
        `erase: ${what} (deleteIntent)`,
        {
          tenant: S('t'),
          expiration: N('1796556913'),
          ...(remembers
            ? { replaced_window: { M: { end: N('1796470000'), call: S('refund#a@i0'), key: S('dka') } } }
            : {}),
        },
        onClaim('DeleteItem', 'attribute_not_exists(#owner) AND (attribute_not_exists(#replaced) OR #expiry <= :now)', {
          ':now': N(now),
        }),
        passes,
      ],
    ),
    ...(
      [
        ['past its TTL', '1796556912', true],
        ['not past its TTL', '1796556911.5', false],
      ] as const
    ).map(
      ([what, now, passes]): Case => [
        `erase: an intent held by the holder read, ${what} (deleteIntent)`,
        { ...record, intent_owner: S('refund#owner') },
        onClaim('DeleteItem', '#owner = :from AND #claim = :fromClaim AND #expiry <= :now', {
          ':from': S('refund#owner'),
          ':fromClaim': S('c1'),
          ':now': N(now),
        }),
        passes,
      ],
    ),
    [
      'erase: a record not expired',
      record,
      onClaim('DeleteItem', '#expiry < :now', { ':now': N('1796556911') }),
      false,
    ],
    [
      'erase domain: stamps as read (one absent)',
      { refunded_by: S('call1') },
      onClaim('DeleteItem', 'attribute_not_exists(#by0) AND #by1 = :by1', { ':by1': S('call1') }),
      true,
    ],
    [
      'erase domain: stamped meanwhile',
      { created_by: S('call0'), refunded_by: S('call1') },
      onClaim('DeleteItem', 'attribute_not_exists(#by0) AND #by1 = :by1', { ':by1': S('call1') }),
      false,
    ],
    [
      'refund: an invoice without a refund',
      { amount: N('4200') },
      {
        command: 'UpdateItem',
        input: {
          UpdateExpression: 'SET refund = :refund, refunded_by = :by',
          ConditionExpression: 'attribute_exists(id) AND attribute_not_exists(refund)',
          ExpressionAttributeValues: { ':refund': { M: { refund_id: S('re_1'), amount: N('4200') } }, ':by': S('c1') },
          ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
        },
      },
      true,
    ],
    [
      'refund: no invoice',
      undefined,
      {
        command: 'UpdateItem',
        input: {
          UpdateExpression: 'SET refund = :refund, refunded_by = :by',
          ConditionExpression: 'attribute_exists(id) AND attribute_not_exists(refund)',
          ExpressionAttributeValues: { ':refund': { M: { refund_id: S('re_1') } }, ':by': S('c1') },
          ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
        },
      },
      false,
    ],
    [
      'deliver / close: status as expected (ALL_NEW)',
      { status: S('open') },
      {
        command: 'UpdateItem',
        input: {
          UpdateExpression: 'SET #status = :closed, resolution = :resolution',
          ConditionExpression: 'attribute_exists(id) AND #status = :open',
          ExpressionAttributeNames: names('status'),
          ExpressionAttributeValues: { ':closed': S('closed'), ':open': S('open'), ':resolution': S('done') },
          ReturnValues: 'ALL_NEW',
          ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
        },
      },
      true,
    ],
    [
      'deliver / close: already closed (returns it)',
      { status: S('closed') },
      {
        command: 'UpdateItem',
        input: {
          UpdateExpression: 'SET #status = :closed, resolution = :resolution',
          ConditionExpression: 'attribute_exists(id) AND #status = :open',
          ExpressionAttributeNames: names('status'),
          ExpressionAttributeValues: { ':closed': S('closed'), ':open': S('open'), ':resolution': S('done') },
          ReturnValues: 'ALL_NEW',
          ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
        },
      },
      false,
    ],
    [
      'tombstone: SET and REMOVE of present and absent attributes',
      { ...record, status: S('COMPLETED'), downstream_key: S('d1') },
      {
        command: 'UpdateItem',
        input: {
          UpdateExpression:
            'SET #status = :erased REMOVE #data, #call, #validation, #downstream, #claim, #stalled, #none',
          ConditionExpression: '#status = :completed',
          ExpressionAttributeNames: {
            ...names('status', 'data', 'call', 'validation'),
            '#downstream': 'downstream_key',
            '#claim': 'claim_id',
            '#stalled': 'stalled_claim',
            '#none': 'not_there',
          },
          ExpressionAttributeValues: { ':erased': S('ERASED'), ':completed': S('COMPLETED') },
        },
      },
      true,
    ],
    [
      'delete of an item that is not there (DynamoDB Local answers its capacity, unasked)',
      undefined,
      onClaim('DeleteItem', 'attribute_not_exists(#by0) AND attribute_not_exists(#by1)', {}),
      true,
    ],
    [
      'refused as invalid: a value given and not used',
      record,
      {
        command: 'DeleteItem',
        input: {
          ConditionExpression: 'attribute_exists(id)',
          ExpressionAttributeValues: { ':unused': S('x') },
        },
      },
      false,
    ],
    [
      // A mutant of erase's delete of an unstamped app item sends one: Local refuses it, so must the model.
      'refused as invalid: an empty ExpressionAttributeValues',
      record,
      {
        command: 'DeleteItem',
        input: {
          ConditionExpression: 'attribute_not_exists(#by)',
          ExpressionAttributeNames: { '#by': 'created_by' },
          ExpressionAttributeValues: {},
        },
      },
      false,
    ],
    [
      'refused as invalid: an empty ExpressionAttributeNames',
      record,
      {
        command: 'DeleteItem',
        input: { ConditionExpression: 'attribute_exists(id)', ExpressionAttributeNames: {} },
      },
      false,
    ],
    [
      'refused as invalid: a name used and not given',
      record,
      { command: 'DeleteItem', input: { ConditionExpression: 'attribute_exists(#id)' } },
      false,
    ],
    [
      'numbers: stored as DynamoDB Local stores them',
      undefined,
      {
        command: 'PutItem',
        input: { Item: { a: N('1.50'), b: N('1e2'), c: N('-0.000'), d: N('0012.3400'), e: N('-7E-3') } },
      },
      true,
    ],
  ];

  async function attempt(client: DynamoDBClient, id: string, write: Case[2]) {
    const Key = { id: S(id) };
    const input = { TableName: TABLE, ...write.input };
    try {
      const output =
        write.command === 'PutItem'
          ? await client.send(
              new PutItemCommand({ ...input, Item: { ...Key, ...(write.input.Item as object) } } as never),
            )
          : write.command === 'UpdateItem'
            ? await client.send(new UpdateItemCommand({ ...input, Key } as never))
            : await client.send(new DeleteItemCommand({ ...input, Key } as never));
      const { $metadata: _, ...rest } = output;
      return { written: true, output: rest };
    } catch (error) {
      const { name, Item } = error as { name: string; Item?: unknown };
      return { written: false, error: name, item: Item };
    }
  }

  it.each(CASES)('%s', async (label, existing, write, passes) => {
    const id = `${label.replace(/\W+/g, '-')}-${randomBytes(3).toString('hex')}`;
    const outcomes = [];
    for (const client of [clients.local!, clients.memory!]) {
      if (existing) await client.send(new PutItemCommand({ TableName: TABLE, Item: { id: S(id), ...existing } }));
      const outcome = await attempt(client, id, write);
      const { Item } = await client.send(
        new GetItemCommand({ TableName: TABLE, Key: { id: S(id) }, ConsistentRead: true }),
      );
      outcomes.push(canonical({ outcome, after: Item ?? null }));
    }

    expect(outcomes[1]).toEqual(outcomes[0]);
    expect(JSON.parse(outcomes[0]!).outcome.written).toBe(passes);
  });

  // The intent takeover's one transaction (protocol/intent.ts, takeOverIntent): the intent's holder swapped and
  // the taker's record's key fixed, both or neither — and every other kind of item, once held and once refused.
  const swap = (id: string, from: string, asked: object = {}) => ({
    Update: {
      Key: { id: S(id) },
      UpdateExpression: 'SET #h = :to',
      ConditionExpression: '#h = :from',
      ExpressionAttributeNames: { '#h': 'holder' },
      ExpressionAttributeValues: { ':to': S('taker'), ':from': S(from) },
      ...asked,
    },
  });
  const fix = (id: string, claim: string, asked: object = {}) => ({
    Update: {
      Key: { id: S(id) },
      UpdateExpression: 'SET #d = :d',
      ConditionExpression: '#c = :c',
      ExpressionAttributeNames: { '#d': 'downstream_key', '#c': 'claim_id' },
      ExpressionAttributeValues: { ':d': S('dA'), ':c': S(claim) },
      ...asked,
    },
  });
  const ALL_OLD = { ReturnValuesOnConditionCheckFailure: 'ALL_OLD' };
  it.each<[string, (a: string, b: string) => object[], boolean]>([
    ['both conditions hold: both writes', (a, b) => [swap(a, 'gone'), fix(b, 'c1')], true],
    [
      "the taker's claim lost (its record erased): neither, the failed item's reason alone",
      (a, b) => [swap(a, 'gone', ALL_OLD), fix(b, 'c2')],
      false,
    ],
    [
      'the intent moved and the claim lost: every reason, the item asked for',
      (a, b) => [swap(a, 'other', ALL_OLD), fix(b, 'c2', ALL_OLD)],
      false,
    ],
    [
      'put, delete and a condition check',
      (a, b) => [
        { Put: { Item: { id: S(`${a}-new`), v: S('1') }, ConditionExpression: 'attribute_not_exists(id)' } },
        { Delete: { Key: { id: S(a) }, ConditionExpression: 'attribute_exists(holder)' } },
        {
          ConditionCheck: {
            Key: { id: S(b) },
            ConditionExpression: '#c = :c',
            ExpressionAttributeNames: { '#c': 'claim_id' },
            ExpressionAttributeValues: { ':c': S('c1') },
          },
        },
      ],
      true,
    ],
    [
      'refused as invalid: two items on one key',
      (a) => [
        { Update: { Key: { id: S(a) }, UpdateExpression: 'SET v = :v', ExpressionAttributeValues: { ':v': S('1') } } },
        { ConditionCheck: { Key: { id: S(a) }, ConditionExpression: 'attribute_exists(id)' } },
      ],
      false,
    ],
  ])('a transaction (TransactWriteItems): %s', async (_label, items, passes) => {
    const [a, b] = ['txa', 'txb'].map((name) => `${name}-${randomBytes(3).toString('hex')}`) as [string, string];
    const outcomes = [];
    for (const client of [clients.local!, clients.memory!]) {
      await client.send(new PutItemCommand({ TableName: TABLE, Item: { id: S(a), holder: S('gone') } }));
      await client.send(
        new PutItemCommand({ TableName: TABLE, Item: { id: S(b), claim_id: S('c1'), status: S('INPROGRESS') } }),
      );
      const TransactItems = items(a, b).map((item) =>
        Object.fromEntries(Object.entries(item).map(([kind, request]) => [kind, { TableName: TABLE, ...request }])),
      );
      let outcome: unknown;
      try {
        const { $metadata: _, ...rest } = await client.send(new TransactWriteItemsCommand({ TransactItems } as never));
        outcome = { written: true, output: rest };
      } catch (error) {
        const { name, message, CancellationReasons } = error as {
          name: string;
          message: string;
          CancellationReasons?: unknown;
        };
        outcome = { written: false, error: name, message, reasons: CancellationReasons };
      }
      const after = [];
      for (const id of [a, b, `${a}-new`]) {
        after.push(
          (await client.send(new GetItemCommand({ TableName: TABLE, Key: { id: S(id) }, ConsistentRead: true })))
            .Item ?? null,
        );
      }
      outcomes.push(canonical({ outcome, after }));
    }

    expect(outcomes[1]).toEqual(outcomes[0]);
    expect(JSON.parse(outcomes[0]!).outcome.written).toBe(passes);
  });

  it("a transaction's ClientRequestToken: a refused one is not kept; an applied one succeeds again unchanged, and refuses another request", async () => {
    const outcomes = [];
    // The same item and token on both stores (the table's later scans compare them).
    const id = `token-${randomBytes(3).toString('hex')}`;
    const token = `token-${randomBytes(6).toString('hex')}`;
    for (const client of [clients.local!, clients.memory!]) {
      const set = (to: string, when: string) =>
        new TransactWriteItemsCommand({
          ClientRequestToken: token,
          TransactItems: [
            {
              Update: {
                TableName: TABLE,
                Key: { id: S(id) },
                UpdateExpression: 'SET v = :to',
                ConditionExpression: 'v = :when',
                ExpressionAttributeValues: { ':to': S(to), ':when': S(when) },
              },
            },
          ],
        });
      const steps: unknown[] = [];
      const step = async (write: () => Promise<unknown>) => {
        try {
          await write();
          steps.push('ok');
        } catch (error) {
          steps.push((error as Error).name);
        }
        const { Item } = await client.send(
          new GetItemCommand({ TableName: TABLE, Key: { id: S(id) }, ConsistentRead: true }),
        );
        steps.push(Item?.v?.S);
      };
      await client.send(new PutItemCommand({ TableName: TABLE, Item: { id: S(id), v: S('0') } }));
      await step(() => client.send(set('2', '1'))); // refused: v is 0
      await step(() => client.send(new PutItemCommand({ TableName: TABLE, Item: { id: S(id), v: S('1') } })));
      await step(() => client.send(set('2', '1'))); // the same token again: applied now
      await step(() => client.send(new PutItemCommand({ TableName: TABLE, Item: { id: S(id), v: S('1') } })));
      await step(() => client.send(set('2', '1'))); // applied before: succeeds, changes nothing
      await step(() => client.send(set('3', '1'))); // another request under it: refused
      outcomes.push(steps);
    }

    expect(outcomes[1]).toEqual(outcomes[0]);
    expect(outcomes[0]).toEqual([
      'TransactionCanceledException',
      '0',
      'ok',
      '1',
      'ok',
      '2',
      'ok',
      '1',
      'ok',
      '1',
      'IdempotentParameterMismatchException',
      '1',
    ]);
  });

  it('a Scan past 1 MB: the same pages, and the next page when the last item read is gone', async () => {
    const table = `pages${randomBytes(3).toString('hex')}`;
    const read = async (client: DynamoDBClient) => {
      await client.send(
        new CreateTableCommand({
          TableName: table,
          BillingMode: 'PAY_PER_REQUEST',
          AttributeDefinitions: [{ AttributeName: 'id', AttributeType: 'S' }],
          KeySchema: [{ AttributeName: 'id', KeyType: 'HASH' }],
        }),
      );
      for (let i = 0; i < 24; i++) {
        await client.send(
          new PutItemCommand({ TableName: table, Item: { id: S(`item-${i}`), body: S('x'.repeat(100_000 + i)) } }),
        );
      }
      const pages = [];
      let start: Record<string, AttributeValue> | undefined;
      do {
        const {
          $metadata: _,
          Items,
          ...page
        } = await client.send(
          new ScanCommand({
            TableName: table,
            ProjectionExpression: 'id',
            ExclusiveStartKey: start,
            ConsistentRead: true,
            ReturnConsumedCapacity: 'TOTAL',
          }),
        );
        pages.push({ ...page, ids: Items?.map((item) => item.id!.S) });
        start = page.LastEvaluatedKey;
        // The item the page ended on is deleted before the next page is read.
        if (start) await client.send(new DeleteItemCommand({ TableName: table, Key: start }));
      } while (start);
      return canonical(pages);
    };

    const local = await read(clients.local!);
    const inMemory = await read(clients.memory!);

    expect(inMemory).toEqual(local);
    expect(JSON.parse(local).length).toBeGreaterThan(1);
  });

  it('a parallel Scan: every segment, its order and filter, a Query with a projection, and Select (the count alone, or all)', async () => {
    const tenant = `tenant-${randomBytes(3).toString('hex')}`;
    const read = async (client: DynamoDBClient) => {
      for (let i = 0; i < 25; i++) {
        await client.send(
          new PutItemCommand({
            TableName: TABLE,
            Item: { id: S(`${tenant}-${i}`), tenant: S(i % 3 === 0 ? 'other' : tenant), n: N(String(i)) },
          }),
        );
      }
      const pages = [];
      for (let segment = 0; segment < 3; segment++) {
        const { $metadata: _, ...page } = await client.send(
          new ScanCommand({
            TableName: TABLE,
            Segment: segment,
            TotalSegments: 3,
            FilterExpression: '#tenant = :tenant',
            ExpressionAttributeNames: { '#tenant': 'tenant' },
            ExpressionAttributeValues: { ':tenant': S(tenant) },
            ConsistentRead: true,
            ReturnConsumedCapacity: 'TOTAL',
          }),
        );
        pages.push(page);
      }
      const { $metadata: _, ...query } = await client.send(
        new QueryCommand({
          TableName: TABLE,
          KeyConditionExpression: '#a0 = :id',
          ProjectionExpression: '#a0, #a1',
          ExpressionAttributeNames: { '#a0': 'id', '#a1': 'n' },
          ExpressionAttributeValues: { ':id': S(`${tenant}-4`) },
          ConsistentRead: true,
          ReturnConsumedCapacity: 'TOTAL',
        }),
      );
      // A count alone (erase's tests count a tenant's items so): the same items read and filtered, no Items.
      const counted = [];
      for (const select of ['COUNT', 'ALL_ATTRIBUTES'] as const) {
        const { $metadata: _q, ...count } = await client.send(
          new QueryCommand({
            TableName: TABLE,
            KeyConditionExpression: '#a0 = :id',
            FilterExpression: '#a1 > :n',
            ExpressionAttributeNames: { '#a0': 'id', '#a1': 'n' },
            ExpressionAttributeValues: { ':id': S(`${tenant}-4`), ':n': N('3') },
            ConsistentRead: true,
            ReturnConsumedCapacity: 'TOTAL',
            Select: select,
          }),
        );
        const { $metadata: _s, ...scanned } = await client.send(
          new ScanCommand({
            TableName: TABLE,
            FilterExpression: '#tenant = :tenant',
            ExpressionAttributeNames: { '#tenant': 'tenant' },
            ExpressionAttributeValues: { ':tenant': S(tenant) },
            ConsistentRead: true,
            Select: select,
          }),
        );
        counted.push({ count, scanned: { ...scanned, Items: scanned.Items?.length } });
      }
      return canonical({ pages, query, counted });
    };

    const local = await read(clients.local!);
    const inMemory = await read(clients.memory!);

    expect(inMemory).toEqual(local);
    expect(local).toContain(`${tenant}-4`);
    const { counted } = JSON.parse(local);
    expect(counted[0].count).not.toHaveProperty('Items');
    expect(counted[0].count.Count).toBe(1);
    expect(counted[0].scanned.Count).toBe(16);
  });
});

/**
 * The tables' own operations as the tests and lib/ send them (lib/store/create-tables, the mutation run's
 * tests on the in-memory engine, test/mutation/memory-engine.ts): each answer of DynamoDB Local and of
 * the engine, the same but for the creation time (and the stream label and ARN made of it).
 */
describe('tables: the in-memory engine answers as DynamoDB Local does', () => {
  let clients: { local: DynamoDBClient; memory: DynamoDBClient };

  beforeAll(() => {
    clients = clientPair();
  });

  afterAll(() => {
    clients.local.destroy();
    clients.memory.destroy();
  });

  /** Each request's output (its `$metadata` left out) or error, with `<created>` for the creation time. */
  async function answers(client: DynamoDBClient, commands: readonly object[]) {
    const outcomes = [];
    for (const command of commands) {
      try {
        const { $metadata: _, ...output } = await client.send(command as never);
        outcomes.push({ output });
      } catch (error) {
        outcomes.push({ error: (error as Error).name, message: (error as Error).message });
      }
    }
    return canonical(outcomes)
      .replace(/1970-01-01T00:00:00\.000Z/g, '<epoch>')
      .replace(/\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z?/g, '<created>');
  }

  it.each([
    ['the idempotency table (stream, TTL)', IDEMPOTENCY_TABLE],
    ['an app table (sort key, no stream)', TABLES.invoices],
  ] as const)(
    '%s: CreateTable, UpdateTimeToLive, DescribeTable, DeleteTable, and each again once deleted',
    async (_label, schema) => {
      const name = `tables-${randomBytes(3).toString('hex')}`;
      const key = {
        [schema.partitionKey.name]: { S: 'p' },
        ...('sortKey' in schema ? { [schema.sortKey.name]: { S: 's' } } : {}),
      };
      const commands = [
        new CreateTableCommand(createTableInput(schema, name)),
        new CreateTableCommand(createTableInput(schema, name)),
        new UpdateTimeToLiveCommand({
          TableName: name,
          TimeToLiveSpecification: { AttributeName: 'expiration', Enabled: true },
        }),
        new PutItemCommand({ TableName: name, Item: { ...key, body: { S: 'x'.repeat(100) } } }),
        new DescribeTableCommand({ TableName: name }),
        new DeleteTableCommand({ TableName: name }),
        new DescribeTableCommand({ TableName: name }),
        new DeleteTableCommand({ TableName: name }),
        new UpdateTimeToLiveCommand({
          TableName: name,
          TimeToLiveSpecification: { AttributeName: 'expiration', Enabled: true },
        }),
        new PutItemCommand({ TableName: name, Item: key }),
      ];

      const local = await answers(clients.local, commands);
      const inMemory = await answers(clients.memory, commands);

      expect(inMemory).toEqual(local);
      expect(local).toContain('ResourceNotFoundException');
      expect(memory.unmodelled).toEqual([]);
    },
  );

  it("is not answered where a deleted table's stream would be: DynamoDB Local keeps it, the model does not", () => {
    const engine = new MemoryDynamoDB();
    const input = { ...createTableInput(IDEMPOTENCY_TABLE, 'deleted') };
    const { TableDescription } = engine.handle('ns', 'CreateTable', input) as {
      TableDescription: { LatestStreamArn: string };
    };
    engine.handle('ns', 'DeleteTable', { TableName: 'deleted' });

    expect(() => engine.handle('ns', 'ListStreams', {})).toThrow(NotModelledError);
    expect(() => engine.handle('ns', 'ListStreams', { TableName: 'deleted' })).toThrow(NotModelledError);
    expect(() => engine.handle('ns', 'DescribeStream', { StreamArn: TableDescription.LatestStreamArn })).toThrow(
      NotModelledError,
    );
    expect(engine.handle('ns', 'ListStreams', { TableName: 'other' })).toEqual({ Streams: [] });
  });
});

describe('divertDefaultHandler: the clients lib/ builds, on the engine without a handler of their own', () => {
  it("answers the engine's endpoint from the engine, sends any other over the network, and is undone", async () => {
    const engine = new MemoryDynamoDB();
    engine.handle('diverted', 'CreateTable', { ...createTableInput(TABLES.ledger, 'ledger') });
    const env = { ...process.env, DYNAMODB_ENDPOINT: MEMORY_ENDPOINT };
    const unreachable = { ...env, DYNAMODB_ENDPOINT: `http://127.0.0.1:${await freePort()}` };
    const listTables = async (from: NodeJS.ProcessEnv) => {
      const credentials = { accessKeyId: 'diverted', secretAccessKey: 'x' };
      const client = createDynamoDBClient(from, { maxAttempts: 1, credentials });
      try {
        return (await client.send(new ListTablesCommand({}))).TableNames;
      } catch (error) {
        // The SDK wraps the socket's error: its code is in the message.
        return /\b(ECONNREFUSED|ENOTFOUND)\b/.exec((error as Error).message)?.[1] ?? (error as Error).message;
      } finally {
        client.destroy();
      }
    };

    const undo = divertDefaultHandler(MEMORY_ENDPOINT, memoryRequestHandler(engine, []));
    const diverted = [await listTables(env), await listTables(unreachable)];
    undo();
    const undone = await listTables(env);

    expect(diverted).toEqual([['ledger'], 'ECONNREFUSED']);
    expect(undone).toBe('ENOTFOUND');
  });
});
