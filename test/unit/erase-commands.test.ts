import { DeleteItemCommand, DynamoDBClient, GetItemCommand, QueryCommand, ScanCommand } from '@aws-sdk/client-dynamodb';
import { mockClient } from 'aws-sdk-client-mock';
import { parseEraseRequest } from '../../lib/admin/erase-request';
import { eraseTenant } from '../../lib/admin/erase-tenant';
import { scanTenantRecords } from '../../lib/admin/tenant-scan';

/**
 * The exact requests tenant erase sends. Its behaviour is tested on DynamoDB Local (erase-example.test.ts, erase-tenant.test.ts), but
 * DynamoDB Local reads strongly consistent whatever is asked: only the request shows that every read
 * erase decides on is consistent. An eventually consistent Scan may miss a call claimed a moment before
 * (erase would then report the tenant clean while that call runs) or return a stamp already replaced.
 */
const client = new DynamoDBClient({ region: 'us-east-1', credentials: { accessKeyId: 'x', secretAccessKey: 'x' } });
const dynamodb = mockClient(client);
beforeEach(() => dynamodb.reset());
afterAll(() => dynamodb.restore());

const ENV = { IDEMPOTENCY_TABLE: 'keys' };

describe('the idempotency table’s Scan', () => {
  it('is consistent, parallel and paginated, filtered on the tenant, counting its read units', async () => {
    dynamodb
      .on(ScanCommand, { Segment: 0 })
      .resolvesOnce({ Items: [], LastEvaluatedKey: { id: { S: 'a#1' } }, ConsumedCapacity: { CapacityUnits: 1.5 } })
      .resolvesOnce({ Items: [], ConsumedCapacity: { CapacityUnits: 0.5 } });
    dynamodb.on(ScanCommand, { Segment: 1 }).resolves({ Items: [], ConsumedCapacity: { CapacityUnits: 2 } });

    const readUnits = await scanTenantRecords(client, 'keys', 'acme', { segments: 2 }, () => undefined);

    const scans = dynamodb.commandCalls(ScanCommand).map((call) => call.args[0].input);
    expect(scans).toEqual([
      expect.objectContaining({ Segment: 0, ExclusiveStartKey: undefined }),
      expect.objectContaining({ Segment: 1, ExclusiveStartKey: undefined }),
      expect.objectContaining({ Segment: 0, ExclusiveStartKey: { id: { S: 'a#1' } } }),
    ]);
    for (const scan of scans) {
      expect(scan).toMatchObject({
        TableName: 'keys',
        TotalSegments: 2,
        FilterExpression: '#tenant = :tenant',
        ExpressionAttributeNames: { '#tenant': 'tenant' },
        ExpressionAttributeValues: { ':tenant': { S: 'acme' } },
        ConsistentRead: true,
        ReturnConsumedCapacity: 'TOTAL',
      });
    }
    expect(readUnits).toBe(4);
  });

  it('ANDs a filter to the tenant’s', async () => {
    dynamodb.on(ScanCommand).resolves({ Items: [] });

    await scanTenantRecords(
      client,
      'keys',
      'acme',
      { segments: 1, filter: { expression: '#s = :s', names: { '#s': 'status' }, values: { ':s': { S: 'X' } } } },
      () => undefined,
    );

    expect(dynamodb.commandCalls(ScanCommand)[0]?.args[0].input).toMatchObject({
      FilterExpression: '#tenant = :tenant AND #s = :s',
      ExpressionAttributeNames: { '#tenant': 'tenant', '#s': 'status' },
      ExpressionAttributeValues: { ':tenant': { S: 'acme' }, ':s': { S: 'X' } },
      ConsistentRead: true,
    });
  });
});

describe('an app table’s items', () => {
  const TABLES = {
    contacts: { partitionKey: { name: 'tenant', type: 'S' as const }, sortKey: { name: 'email', type: 'S' as const } },
    tickets: {
      partitionKey: { name: 'ticket_id', type: 'S' as const },
      tenantAttribute: 'org',
      callStamps: ['created_by', 'closed_by'],
    },
  };

  it('found with a consistent Query (tenant is the partition key) or a consistent filtered Scan, deleted on the stamps read', async () => {
    dynamodb.on(ScanCommand, { TableName: 'keys' }).resolves({ Items: [] });
    dynamodb
      .on(QueryCommand)
      .resolvesOnce({
        Items: [{ tenant: { S: 'acme' }, email: { S: 'ada@example.com' } }],
        LastEvaluatedKey: { tenant: { S: 'acme' }, email: { S: 'ada@example.com' } },
        ConsumedCapacity: { CapacityUnits: 2 },
      })
      .resolvesOnce({ Items: [], ConsumedCapacity: { CapacityUnits: 0.5 } });
    dynamodb.on(ScanCommand, { TableName: 'tickets' }).resolves({
      Items: [
        { ticket_id: { S: 'T-1' }, org: { S: 'acme' }, created_by: { S: 'open_ticket#h@c1' } },
        { ticket_id: { S: 'T-2' }, org: { S: 'acme' } },
      ],
    });
    // The stamping call's record is gone: settled long ago.
    dynamodb.on(GetItemCommand).resolves({});
    dynamodb.on(DeleteItemCommand).resolves({});

    const report = await eraseTenant(client, { tenant: 'acme', includeDomain: true, segments: 1 }, ENV, {
      contacts: { ...TABLES.contacts, tenantAttribute: 'tenant' },
      tickets: TABLES.tickets,
    });

    // Paginated: the second page starts where the first ended.
    expect(dynamodb.commandCalls(QueryCommand)[1]?.args[0].input.ExclusiveStartKey).toEqual({
      tenant: { S: 'acme' },
      email: { S: 'ada@example.com' },
    });
    expect(dynamodb.commandCalls(QueryCommand)[0]?.args[0].input).toEqual({
      TableName: 'contacts',
      KeyConditionExpression: '#a0 = :tenant',
      ProjectionExpression: '#a0, #a1',
      ExpressionAttributeNames: { '#a0': 'tenant', '#a1': 'email' },
      ExpressionAttributeValues: { ':tenant': { S: 'acme' } },
      ConsistentRead: true,
      ReturnConsumedCapacity: 'TOTAL',
      ExclusiveStartKey: undefined,
    });
    const ticketScan = dynamodb.commandCalls(ScanCommand).find((call) => call.args[0].input.TableName === 'tickets');
    expect(ticketScan?.args[0].input).toEqual({
      TableName: 'tickets',
      FilterExpression: '#a0 = :tenant',
      ProjectionExpression: '#a0, #a1, #a2, #a3',
      ExpressionAttributeNames: { '#a0': 'org', '#a1': 'ticket_id', '#a2': 'created_by', '#a3': 'closed_by' },
      ExpressionAttributeValues: { ':tenant': { S: 'acme' } },
      ConsistentRead: true,
      ReturnConsumedCapacity: 'TOTAL',
      ExclusiveStartKey: undefined,
    });
    // The stamp's call is read consistently before its item is deleted.
    expect(dynamodb.commandCalls(GetItemCommand)[0]?.args[0].input).toMatchObject({
      TableName: 'keys',
      Key: { id: { S: 'open_ticket#h' } },
      ConsistentRead: true,
    });
    expect(dynamodb.commandCalls(DeleteItemCommand).map((call) => call.args[0].input)).toEqual([
      { TableName: 'contacts', Key: { tenant: { S: 'acme' }, email: { S: 'ada@example.com' } } },
      {
        TableName: 'tickets',
        Key: { ticket_id: { S: 'T-1' } },
        // As read: this stamp, and no `closed_by` — a close landing meanwhile keeps the ticket.
        ConditionExpression: '#by0 = :by0 AND attribute_not_exists(#by1)',
        ExpressionAttributeNames: { '#by0': 'created_by', '#by1': 'closed_by' },
        ExpressionAttributeValues: { ':by0': { S: 'open_ticket#h@c1' } },
      },
      {
        TableName: 'tickets',
        Key: { ticket_id: { S: 'T-2' } },
        // Unstamped when read: no values at all (DynamoDB refuses an empty ExpressionAttributeValues).
        ConditionExpression: 'attribute_not_exists(#by0) AND attribute_not_exists(#by1)',
        ExpressionAttributeNames: { '#by0': 'created_by', '#by1': 'closed_by' },
      },
    ]);
    expect(report.tables).toMatchObject({
      contacts: { found: 1, deleted: 1, inFlight: 0, readUnits: 2.5 },
      tickets: { found: 2, deleted: 2, inFlight: 0 },
    });
  });
});

describe('an erase request', () => {
  it('passes a well-formed one through as it is', () => {
    expect(parseEraseRequest({ tenant: 'acme' })).toEqual({ tenant: 'acme' });
    expect(parseEraseRequest({ tenant: 'acme', includeDomain: true, dryRun: false })).toEqual({
      tenant: 'acme',
      includeDomain: true,
      dryRun: false,
    });
  });

  it.each([
    [{}, 'tenant'],
    [{ tenant: '' }, 'tenant'],
    [{ tenant: 'acme', includeDomain: 'yes' }, 'includeDomain'],
    [{ tenant: 'acme', dryRun: 1 }, 'dryRun'],
    [{ tenant: 'acme', segments: 4 }, 'segments'],
  ])('refuses %j, naming the field (%s)', (input, field) => {
    expect(() => parseEraseRequest(input)).toThrow(TypeError);
    expect(() => parseEraseRequest(input)).toThrow(new RegExp(field));
  });

  it('names the request itself when it is not an object', () => {
    expect(() => parseEraseRequest('acme')).toThrow(/^request/);
  });
});
