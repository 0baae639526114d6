import { SendMessageBatchCommand, SQSClient } from '@aws-sdk/client-sqs';
import { mockClient } from 'aws-sdk-client-mock';
import { completerTrigger, recheckBatch } from '../../lib/admin/completer';
import { parseRecheckMessage, RecheckQueueError, SqsRecheckQueue } from '../../lib/admin/recheck-queue';
import type { Recheck, RecheckOutcome } from '../../lib/idempotency';
import { deadline } from '../helpers/world';

const QUEUE_URL = 'https://sqs.eu-west-1.amazonaws.com/123456789012/rechecks';

function rechecks(count: number): Recheck[] {
  return Array.from({ length: count }, (_, i) => ({ key: `key-${i}`, claim: `claim-${i}`, delaySeconds: i % 900 }));
}

describe('SqsRecheckQueue', () => {
  const sqs = mockClient(SQSClient);
  afterEach(() => sqs.reset());
  afterAll(() => sqs.restore());

  it('sends every recheck as one message with its delay, ten to a SendMessageBatch', async () => {
    sqs.on(SendMessageBatchCommand).callsFake(async (input) => ({
      Successful: input.Entries.map((entry: { Id: string }) => ({ Id: entry.Id, MessageId: `m-${entry.Id}` })),
      Failed: [],
    }));
    const sent = rechecks(23);

    await new SqsRecheckQueue(new SQSClient({ region: 'eu-west-1' }), QUEUE_URL).send(sent);

    const requests = sqs.commandCalls(SendMessageBatchCommand).map((call) => call.args[0].input);
    expect(requests.map((request) => request.Entries?.length)).toEqual([10, 10, 3]);
    expect(requests.every((request) => request.QueueUrl === QUEUE_URL)).toBe(true);
    const entries = requests.flatMap((request) => request.Entries ?? []);
    expect(entries.map((entry) => [JSON.parse(entry.MessageBody!), entry.DelaySeconds])).toEqual(
      sent.map((recheck) => [{ key: recheck.key, claim: recheck.claim }, recheck.delaySeconds]),
    );
    // Ids are unique within each request, as SQS requires.
    for (const request of requests) {
      expect(new Set(request.Entries?.map((entry) => entry.Id)).size).toBe(request.Entries?.length);
    }
  });

  it('throws when SQS refuses any entry, so the stream batch that scheduled it is retried', async () => {
    sqs.on(SendMessageBatchCommand).resolves({
      Successful: [{ Id: '0', MessageId: 'm0', MD5OfMessageBody: '' }],
      Failed: [{ Id: '1', SenderFault: false, Code: 'InternalError', Message: 'try again' }],
    });

    const sending = new SqsRecheckQueue(new SQSClient({ region: 'eu-west-1' }), QUEUE_URL).send(rechecks(2));

    await expect(sending).rejects.toThrow(RecheckQueueError);
    await expect(sending).rejects.toThrow(/InternalError: try again/);
  });

  it('sends nothing for no rechecks', async () => {
    await new SqsRecheckQueue(new SQSClient({ region: 'eu-west-1' }), QUEUE_URL).send([]);

    expect(sqs.calls()).toHaveLength(0);
  });
});

describe('parseRecheckMessage', () => {
  it('reads the key and the claim', () => {
    expect(parseRecheckMessage('{"key":"k","claim":"c"}')).toEqual({ key: 'k', claim: 'c' });
  });

  it.each([
    ['not JSON', 'key=k', /^message: /],
    ['a JSON array', '[]', /^message: /],
    ['no claim', '{"key":"k"}', /^claim: /],
    ['an empty key', '{"key":"","claim":"c"}', /^key: /],
    ['a claim that is no string', '{"key":"k","claim":7}', /^claim: /],
    ['an unknown field', '{"key":"k","claim":"c","tenant":"t"}', /^tenant: unknown field/],
  ])('refuses %s, naming the field', (_label, body, problem) => {
    expect(() => parseRecheckMessage(body)).toThrow(problem);
  });
});

describe('completerTrigger', () => {
  it.each([
    ['a stream batch', { Records: [{ eventSource: 'aws:dynamodb' }] }, 'stream'],
    ['an SQS batch', { Records: [{ eventSource: 'aws:sqs' }, { eventSource: 'aws:sqs' }] }, 'rechecks'],
  ])('tells %s', (_label, event, source) => {
    expect(completerTrigger(event).source).toBe(source);
  });

  it.each([
    ['a direct invoke', {}],
    ['no records', { Records: [] }],
    ['a mixed batch', { Records: [{ eventSource: 'aws:sqs' }, { eventSource: 'aws:dynamodb' }] }],
    ['another source', { Records: [{ eventSource: 'aws:kinesis' }] }],
    ['nothing', null],
  ])('refuses %s', (_label, event) => {
    expect(() => completerTrigger(event)).toThrow(/^event: /);
  });
});

describe('recheckBatch', () => {
  it('runs every recheck, counts the outcomes and returns only the messages that failed', async () => {
    const outcomes: Record<string, RecheckOutcome | Error> = {
      k1: 'finished',
      k2: 'settled',
      k3: new Error('store unreachable'),
      k4: 'later',
    };
    const seen: string[] = [];
    const completer = {
      async onRecheck({ key, claim }: { key: string; claim: string }) {
        seen.push(`${key}/${claim}`);
        const outcome = outcomes[key]!;
        if (outcome instanceof Error) throw outcome;
        return outcome;
      },
    };
    const deliveries = [
      ...Object.keys(outcomes).map((key) => ({ messageId: `m-${key}`, body: JSON.stringify({ key, claim: 'c' }) })),
      { messageId: 'm-malformed', body: '{"key":"k5"}' },
    ];

    const report = await recheckBatch(completer, deliveries, deadline());

    expect(seen.sort()).toEqual(['k1/c', 'k2/c', 'k3/c', 'k4/c']); // the malformed one never reaches it
    expect(report).toEqual({
      outcomes: { finished: 1, settled: 1, later: 1, unsettled: 0, gave_up: 0 },
      failedMessageIds: ['m-k3', 'm-malformed'],
    });
  });
});
