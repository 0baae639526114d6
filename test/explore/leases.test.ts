// Rule 8 (docs/state-machine.md): every call ends, in a time its answers state.
/**
 * The explorer's rule-2 check (`leaseViolations`) reads the writes the protocol's own functions send: a
 * claim's `PutItem`, a takeover's `UpdateItem` (`:id`, `:lockEnd`) and a park's (`:claim`, `:until`). Their
 * inputs are taken here from `claim`, `takeOver` and `park` themselves (aws-sdk-client-mock pins the
 * command shapes; the table's answers do not matter), so a renamed placeholder cannot leave the check
 * blind again — it was, for every takeover, until review 33 (it looked for `:lock`).
 */
import {
  ConditionalCheckFailedException,
  DynamoDBClient,
  PutItemCommand,
  UpdateItemCommand,
} from '@aws-sdk/client-dynamodb';
import { mockClient } from 'aws-sdk-client-mock';
import { lastLookMs, latestLockEndMs } from '../../lib/idempotency/call-state';
import { type Claim, claim, takeOver } from '../../lib/idempotency/protocol/claim-writes';
import { park } from '../../lib/idempotency/protocol/settle';
import { EXPIRING_VALUE, idempotencyTable } from '../../lib/idempotency/protocol/table';
import { leaseViolations } from './leases';
import type { ObservedWrite } from './world';

const client = new DynamoDBClient({ region: 'us-east-1', credentials: { accessKeyId: 'x', secretAccessKey: 'x' } });
const mock = mockClient(client);
const table = idempotencyTable({ client, tableName: 'idempotency' });
const refused = new ConditionalCheckFailedException({ message: 'refused', $metadata: {} });
const NOW = 1_800_000_000_000;
const EXPIRES_AT_S = NOW / 1000 + 3_600;
const RECORD = 'refund#r1';

beforeEach(() => {
  mock.reset();
  mock.on(PutItemCommand).rejects(refused);
  mock.on(UpdateItemCommand).rejects(refused);
});

function written(command: 'PutItem' | 'UpdateItem', at: number): ObservedWrite {
  const calls = command === 'PutItem' ? mock.commandCalls(PutItemCommand) : mock.commandCalls(UpdateItemCommand);
  const input = calls.at(-1)!.args[0].input as unknown as Record<string, unknown>;
  return { actor: 'agent', call: undefined, table: 'idempotency', command, input, at };
}

async function claimed(): Promise<ObservedWrite> {
  await claim(
    table,
    {
      recordKey: RECORD,
      tenant: 't',
      tool: 'refund',
      validation: 'v1',
      expiresAtS: EXPIRES_AT_S,
      lockEndsMs: NOW + 30_000,
      call: '{"args":{},"key":"k1","user":"ada"}',
    },
    NOW,
  );
  return written('PutItem', NOW);
}

async function takenOver(lockEndsMs: number, givesUpInAdvance = false): Promise<ObservedWrite> {
  const at = lockEndsMs - 30_000;
  await takeOver(
    table,
    { recordKey: RECORD, fromClaimId: 'c1', validation: 'v1', lockEndsMs, ttlSeconds: 3_600, givesUpInAdvance },
    at,
  );
  return written('UpdateItem', at);
}

/** The claim id a takeover wrote. */
const claimOf = (write: ObservedWrite) =>
  String((write.input.ExpressionAttributeValues as Record<string, { S?: string }>)[':id']?.S);

async function parked(untilMs: number, claimId = 'c1'): Promise<ObservedWrite> {
  const held: Claim = {
    recordKey: RECORD,
    claimId,
    attempt: 1,
    ranBefore: false,
    queuedBefore: 0,
    waitedOn: undefined,
    downstreamKey: undefined,
    callId: 'call-1',
    askedAtMs: NOW,
    expiresAtS: EXPIRES_AT_S,
  };
  await park(table, held, untilMs);
  return written('UpdateItem', NOW + 1_000);
}

describe('leaseViolations reads the protocol’s own writes', () => {
  const lastLook = lastLookMs(EXPIRES_AT_S);
  const lastLockEnd = latestLockEndMs(EXPIRES_AT_S);

  it('a takeover whose lock ends at the last look is a lease, and no violation', async () => {
    expect(leaseViolations([await claimed(), await takenOver(lastLook)], () => 0)).toEqual([]);
  });

  it('a takeover whose lock ends a ms past the last look is one (rule 2; review 32, F1 and F3)', async () => {
    expect(leaseViolations([await claimed(), await takenOver(lastLook + 1)], () => 0)).toEqual([
      expect.stringMatching(
        /^2 lock outlives the last look: agent's takeover .* locks 1 ms past it, its call not given up$/,
      ),
    ]);
  });

  it('one that gave its call up in advance may end past the last look, by the TTL − 10 s (rule 2), and so may its park', async () => {
    const taken = await takenOver(lastLockEnd, true);
    expect(leaseViolations([await claimed(), taken, await parked(lastLockEnd, claimOf(taken))], () => 0)).toEqual([]);
    expect(leaseViolations([await claimed(), await takenOver(lastLockEnd + 1, true)], () => 0)).toEqual([
      expect.stringMatching(/^2 lock outlives the TTL: agent's takeover .* locks until 9999 ms before it$/),
    ]);
  });

  it('a takeover is a lease: a claim anew under its live lock is a violation', async () => {
    const first = await claimed();
    const taken = await takenOver(NOW + 60_000);
    const anew = { ...(await claimed()), actor: 'other', at: NOW + 45_000 };
    expect(leaseViolations([first, taken, anew], () => 0)).toEqual([
      expect.stringMatching(/^2 claimed anew under a live lock: other claimed record .* after agent's attempt began/),
    ]);
  });

  it('a park past the last look gives the call up in the same write (review 35, F4): no violation; one that did not would be, and one at it is not', async () => {
    expect(leaseViolations([await claimed(), await parked(lastLook)], () => 0)).toEqual([]);
    const pastLastLook = await parked(lastLook + 1);
    expect(leaseViolations([await claimed(), pastLastLook], () => 0)).toEqual([]);
    // The same park without its give-up (as the protocol wrote it before review 35's F4).
    const values = { ...(pastLastLook.input.ExpressionAttributeValues as Record<string, unknown>) };
    expect(values[EXPIRING_VALUE]).toBeDefined();
    delete values[EXPIRING_VALUE];
    const notGivenUp = { ...pastLastLook, input: { ...pastLastLook.input, ExpressionAttributeValues: values } };
    expect(leaseViolations([await claimed(), notGivenUp], () => 0)).toEqual([
      expect.stringMatching(
        /^2 lock outlives the last look: agent's park .* locks 1 ms past it, its call not given up$/,
      ),
    ]);
  });
});
