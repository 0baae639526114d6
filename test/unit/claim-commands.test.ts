import {
  ConditionalCheckFailedException,
  DeleteItemCommand,
  DynamoDBClient,
  GetItemCommand,
  PutItemCommand,
  UpdateItemCommand,
} from '@aws-sdk/client-dynamodb';
import { marshall } from '@aws-sdk/util-dynamodb';
import { mockClient } from 'aws-sdk-client-mock';
import { lastLookMs } from '../../lib/idempotency/call-state';
import { NotFoundError } from '../../lib/idempotency/errors';
import { claim } from '../../lib/idempotency/protocol/claim-writes';
import { DEFAULT_RECORD_ATTRIBUTES } from '../../lib/idempotency/protocol/record';
import { idempotencyTable, readCallRecord } from '../../lib/idempotency/protocol/table';
import { ToolRuntime } from '../../lib/idempotency/runtime';
import { noteTool } from '../helpers/tools';
import { deadline } from '../helpers/world';

/**
 * The exact DynamoDB requests a call makes. Behaviour is tested on DynamoDB Local; these pin the
 * shapes the behaviour depends on, so a refactor cannot quietly drop a condition.
 */
describe('the commands a call sends', () => {
  const client = new DynamoDBClient({ region: 'us-east-1', credentials: { accessKeyId: 'x', secretAccessKey: 'x' } });
  const dynamodb = mockClient(client);
  const runtime = new ToolRuntime({ client, tableName: 'keys' });
  const caller = { tenant: 'acme', user: 'ada' };

  beforeEach(() => dynamodb.reset());

  it('claims with one conditional PutItem carrying tenant and tool, then stores the result with UpdateItem', async () => {
    const { tool } = noteTool('send_note', async () => ({ receipt: { n: 1 }, replayed: false }));

    await runtime.invoke(tool, caller, { idempotency_key: 'secret-k1', text: 'hi' }, deadline());

    const puts = dynamodb.commandCalls(PutItemCommand);
    expect(puts).toHaveLength(1);
    const put = puts[0]!.args[0].input;
    expect(put).toMatchObject({
      TableName: 'keys',
      // A first claim only where no record is, or its TTL passed: an abandoned attempt is taken over by
      // an UpdateItem on the claim it read (docs/state-machine.md), never replaced — nor, past its TTL, a call
      // of these arguments in flight that fixed a key not its own (claimed anew keeping it: review 34, F1).
      ConditionExpression:
        'attribute_not_exists(#id) OR (#expiry < :now AND NOT (#status = :inProgress AND #validation = :validation AND attribute_exists(#downstream)))',
      ExpressionAttributeNames: {
        '#id': 'id',
        '#expiry': 'expiration',
        '#status': 'status',
        '#validation': 'validation',
        '#downstream': 'downstream_key',
      },
      ExpressionAttributeValues: {
        ':now': { N: expect.stringMatching(/^\d{10}(\.\d+)?$/) }, // epoch seconds, like the TTL attribute
        ':inProgress': { S: 'INPROGRESS' },
        ':validation': { S: expect.any(String) },
      },
      ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
      Item: {
        id: { S: expect.stringMatching(/^send_note#[A-Za-z0-9+/]{43}=$/) },
        status: { S: 'INPROGRESS' },
        tenant: { S: 'acme' },
        tool: { S: 'send_note' },
        claim_id: { S: expect.any(String) },
        // The call's instance: kept by every takeover, it makes the call id tools stamp their commits with.
        // An id of its own, never the claim's: a task id shows it, and no claim id is ever shown.
        call_id: { S: expect.not.stringMatching(`^${put.Item?.claim_id?.S}$`) },
        attempt: { N: '1' }, // every takeover adds one
        expiration: { N: expect.any(String) },
        in_progress_expiration: { N: expect.any(String) },
        validation: { S: expect.any(String) },
        // When the caller asked: the dedupe window it falls in, an MCP task's createdAt.
        created_at: { N: expect.stringMatching(/^\d{13}$/) },
        // While in flight, what the completer needs to finish the call if this worker dies.
        call: { S: '{"args":{"text":"hi"},"key":"secret-k1","user":"ada"}' },
      },
    });
    // The key and the arguments are never part of the record's key or its validation hash.
    expect(put.Item?.id?.S).not.toContain('secret-k1');
    expect(JSON.stringify(put.Item?.validation)).not.toContain('hi');
    const updates = dynamodb.commandCalls(UpdateItemCommand);
    expect(updates).toHaveLength(1);
    expect(updates[0]!.args[0].input).toMatchObject({
      TableName: 'keys',
      Key: { id: put.Item?.id },
      // The call's key and arguments go with the result: a completed record keeps only their hashes; when
      // it completed is written with it (an MCP task's lastUpdatedAt).
      UpdateExpression: 'SET #expiry = :expiry, #status = :status, #data = :data, #completed = :completed REMOVE #call',
      // Only the claim that wrote the record may store its result.
      ConditionExpression: '#claim = :claim',
      ExpressionAttributeNames: {
        '#claim': 'claim_id',
        '#data': 'data',
        '#status': 'status',
        '#call': 'call',
        '#completed': 'completed_at',
      },
      ExpressionAttributeValues: {
        ':claim': put.Item?.claim_id,
        ':completed': { N: expect.stringMatching(/^\d{13}$/) },
        ':status': { S: 'COMPLETED' },
        ':data': { M: { receipt: { S: '{"n":1}' }, replayed: { BOOL: false } } },
      },
    });
    expect(dynamodb.commandCalls(DeleteItemCommand)).toHaveLength(0);
  });

  it("releases a first attempt's business error with a DeleteItem conditioned on its own claim", async () => {
    const { tool } = noteTool('send_note', async () => {
      throw new NotFoundError('text: nothing to note');
    });

    await runtime.invoke(tool, caller, { idempotency_key: 'k1', text: 'hi' }, deadline());

    const claimId = dynamodb.commandCalls(PutItemCommand)[0]!.args[0].input.Item?.claim_id?.S;
    const deletes = dynamodb.commandCalls(DeleteItemCommand);
    expect(deletes).toHaveLength(1);
    expect(deletes[0]!.args[0].input).toMatchObject({
      TableName: 'keys',
      ConditionExpression: '#claim = :claim AND #status = :inProgress',
      ExpressionAttributeValues: { ':claim': { S: claimId }, ':inProgress': { S: 'INPROGRESS' } },
    });
  });

  it('keeps the record of any other failure — the effect may have happened — and sets its lock to now', async () => {
    const { tool } = noteTool('send_note', async () => {
      throw new Error('boom');
    });

    const before = Date.now();
    await runtime.invoke(tool, caller, { idempotency_key: 'k1', text: 'hi' }, deadline());

    const claimId = dynamodb.commandCalls(PutItemCommand)[0]!.args[0].input.Item?.claim_id?.S;
    expect(dynamodb.commandCalls(DeleteItemCommand)).toHaveLength(0);
    const parks = dynamodb.commandCalls(UpdateItemCommand);
    expect(parks).toHaveLength(1);
    const park = parks[0]!.args[0].input;
    expect(park).toMatchObject({
      TableName: 'keys',
      // A failure after the tool ran: not queued (0 added), and no `unrun_attempts` (it may have made the effect).
      UpdateExpression:
        'SET #lockEnd = :until, #parked = :claim, #queued = if_not_exists(#queued, :queuedBefore) + :queued',
      ConditionExpression: '#claim = :claim AND #status = :inProgress',
      ExpressionAttributeNames: {
        '#lockEnd': 'in_progress_expiration',
        '#parked': 'parked_claim',
        '#queued': 'queued_attempts',
      },
      ExpressionAttributeValues: {
        ':claim': { S: claimId },
        ':inProgress': { S: 'INPROGRESS' },
        ':queued': { N: '0' },
        ':queuedBefore': { N: '0' },
      },
    });
    expect(Number(park.ExpressionAttributeValues?.[':until']?.N)).toBeLessThanOrEqual(Date.now());
    expect(Number(park.ExpressionAttributeValues?.[':until']?.N)).toBeGreaterThanOrEqual(before - 1);
  });

  it('a failure past the last look parks with its lock ended and gives the call up in the same write: no completer look comes before the TTL (rule 2; review 35, F4)', async () => {
    const realNow = Date.now;
    const { tool } = noteTool('send_note', async () => {
      // The tool ran until past the call's last look (its host did not stop it), then failed.
      const expiresAtS = Number(dynamodb.commandCalls(PutItemCommand)[0]!.args[0].input.Item?.expiration?.N);
      const pastLastLook = lastLookMs(expiresAtS) + 1_000;
      jest.spyOn(Date, 'now').mockImplementation(() => pastLastLook);
      throw new Error('boom');
    });
    try {
      await runtime.invoke(tool, caller, { idempotency_key: 'k1', text: 'hi' }, deadline());
    } finally {
      Date.now = realNow;
      jest.restoreAllMocks();
    }
    const claimed = dynamodb.commandCalls(PutItemCommand)[0]!.args[0].input.Item;
    const park = dynamodb.commandCalls(UpdateItemCommand)[0]!.args[0].input;
    expect(park).toMatchObject({
      UpdateExpression:
        'SET #lockEnd = :until, #parked = :claim, #queued = if_not_exists(#queued, :queuedBefore) + :queued, #stalled = :claim, #reason = :expiring',
      ConditionExpression: '#claim = :claim AND #status = :inProgress',
      ExpressionAttributeNames: { '#stalled': 'stalled_claim', '#reason': 'stalled_reason' },
      ExpressionAttributeValues: {
        ':claim': { S: claimed?.claim_id?.S },
        ':expiring': { S: 'expiring' },
        ':until': { N: String(lastLookMs(Number(claimed?.expiration?.N)) + 1_000) },
      },
    });
  });

  it('sends nothing at all for bad input', async () => {
    const { tool } = noteTool();

    await runtime.invoke(tool, caller, { idempotency_key: '', text: 'hi' }, deadline());

    expect(dynamodb.calls()).toHaveLength(0);
  });

  it('makes exactly two store requests for a first execution: claim and result', async () => {
    const { tool } = noteTool('send_note', async () => ({ receipt: { n: 1 }, replayed: false }));
    await runtime.invoke(tool, caller, { idempotency_key: 'k1', text: 'hi' }, deadline());
    expect(dynamodb.calls()).toHaveLength(2);
  });
});

describe('the read every decision is made on', () => {
  // DynamoDB Local reads strongly consistent whatever is asked, so only the request shows this: an eventually
  // consistent read may miss a claim written a moment before and decide on a record that is no longer there.
  // (The mutation run's one disagreement between the engines: `ConsistentRead: false` survived on Local.)
  it('reads a call record with ConsistentRead', async () => {
    const client = new DynamoDBClient({ region: 'us-east-1', credentials: { accessKeyId: 'x', secretAccessKey: 'x' } });
    const dynamodb = mockClient(client);
    dynamodb.on(GetItemCommand).resolves({});

    await readCallRecord({ client, tableName: 'keys', attributes: DEFAULT_RECORD_ATTRIBUTES }, 'send_note#abc');

    expect(dynamodb.commandCalls(GetItemCommand)[0]?.args[0].input).toEqual({
      TableName: 'keys',
      Key: { id: { S: 'send_note#abc' } },
      ConsistentRead: true,
    });
  });
});

/**
 * A first claim refused by an expired call of the same arguments still in flight with a key fixed (review 34,
 * F1): claimed anew on that record's claim, keeping the key — or, none of its attempts ran, as any first claim.
 */
describe('a first claim over an expired call that fixed a key (claimKeeping)', () => {
  const client = new DynamoDBClient({ region: 'us-east-1', credentials: { accessKeyId: 'x', secretAccessKey: 'x' } });
  const dynamodb = mockClient(client);
  const table = idempotencyTable({ client, tableName: 'keys' });
  const NOW = 1_800_000_000_000;
  const first = {
    recordKey: 'send_note#k',
    tenant: 'acme',
    tool: 'send_note',
    validation: 'v1',
    expiresAtS: NOW / 1000 + 3_600,
    lockEndsMs: NOW + 10_000,
    call: '{}',
  };
  const old = (overrides: Record<string, unknown> = {}) => ({
    id: 'send_note#k',
    status: 'INPROGRESS',
    claim_id: 'c-old',
    call_id: 'i-old',
    attempt: 2,
    in_progress_expiration: NOW - 3_700_000,
    expiration: NOW / 1000 - 60,
    validation: 'v1',
    downstream_key: 'k-window',
    tenant: 'acme',
    tool: 'send_note',
    ...overrides,
  });
  const refusedBy = (item: Record<string, unknown>) =>
    new ConditionalCheckFailedException({ message: 'refused', $metadata: {}, Item: marshall(item) });

  beforeEach(() => dynamodb.reset());

  it('keeps the key in its own write, on the old claim, still expired: ranBefore', async () => {
    dynamodb.on(PutItemCommand).rejectsOnce(refusedBy(old())).resolves({});
    const claimed = await claim(table, first, NOW);
    expect(claimed).toMatchObject({
      kind: 'claimed',
      claim: { downstreamKey: 'k-window', ranBefore: true, attempt: 1 },
    });
    const [, second] = dynamodb.commandCalls(PutItemCommand).map((c) => c.args[0].input);
    expect(second).toMatchObject({
      ConditionExpression: '#claim = :oldClaim AND #expiry < :now',
      ExpressionAttributeNames: { '#claim': 'claim_id', '#expiry': 'expiration' },
      ExpressionAttributeValues: { ':oldClaim': { S: 'c-old' }, ':now': { N: String(NOW / 1000) } },
      Item: { downstream_key: { S: 'k-window' }, status: { S: 'INPROGRESS' }, attempt: { N: '1' } },
    });
  });

  it.each([
    ['none of its attempts ran (unrun_attempts)', old({ unrun_attempts: 2 }), 'over it, fresh'],
    ['completed', old({ status: 'COMPLETED' }), 'refused'],
    ['other arguments', old({ validation: 'v2' }), 'refused'],
    ['not expired', old({ expiration: NOW / 1000 + 60 }), 'refused'],
  ] as const)('%s: the key is not kept', async (_what, item, expected) => {
    dynamodb.on(PutItemCommand).rejectsOnce(refusedBy(item)).resolves({});
    const claimed = await claim(table, first, NOW);
    const puts = dynamodb.commandCalls(PutItemCommand).map((c) => c.args[0].input);
    if (expected === 'refused') {
      expect([claimed.kind, puts.length]).toEqual(['refused', 1]);
      return;
    }
    expect(claimed).toMatchObject({ kind: 'claimed', claim: { downstreamKey: undefined, ranBefore: false } });
    expect(puts[1]?.Item?.downstream_key).toBeUndefined();
    expect(puts[1]?.ConditionExpression).toBe('#claim = :oldClaim AND #expiry < :now');
  });
});
