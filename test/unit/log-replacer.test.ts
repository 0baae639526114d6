import { randomUUID } from 'node:crypto';
import { Logger } from '@aws-lambda-powertools/logger';
import { ConditionalCheckFailedException } from '@aws-sdk/client-dynamodb';
import { PutCommand } from '@aws-sdk/lib-dynamodb';
import { createServices } from '../../app/services';
import { tableName } from '../../app/tables';
import { capturedLines } from '../helpers/captured-logger';

const SECRET = `the-email-body-${randomUUID()}`;

/** Every JSON line written to stdout and stderr while `act` runs. */
async function linesWritten(act: () => void): Promise<Array<Record<string, unknown>>> {
  const { lines, restore } = capturedLines();
  try {
    act();
  } finally {
    restore();
  }
  return lines;
}

describe("the services' logger (errorSafeReplacer)", () => {
  const services = createServices({ ...process.env, POWERTOOLS_LOG_LEVEL: 'INFO' });
  afterAll(() => services.client.destroy());

  /** A real `ConditionalCheckFailedException` from DynamoDB, carrying the stored item (`ALL_OLD`). */
  async function refusedWrite(): Promise<ConditionalCheckFailedException> {
    const item = { id: `log-formatter#${randomUUID()}`, args: { to: 'ada@example.com', body: SECRET } };
    const write = (returnOld: boolean) =>
      services.documents.send(
        new PutCommand({
          TableName: tableName('idempotency'),
          Item: item,
          ConditionExpression: 'attribute_not_exists(id)',
          ...(returnOld ? { ReturnValuesOnConditionCheckFailure: 'ALL_OLD' as const } : {}),
        }),
      );
    await write(false);
    const refused = await write(true).catch((error: unknown) => error);
    if (!(refused instanceof ConditionalCheckFailedException)) throw new Error(`expected a refused write: ${refused}`);
    return refused;
  }

  it('logs an SDK error by its name, message, status, request id and stack — never the Item it carries', async () => {
    // Prepare
    const error = await refusedWrite();
    expect(JSON.stringify(error.Item)).toContain(SECRET); // the error does carry it

    // Act: as an attribute, as the error argument, and as the cause of another error
    const lines = await linesWritten(() => {
      services.logger.error('tool call failed', { tool: 'send_email', error });
      services.logger.error('tool call failed', error);
      services.logger.error('tool call failed', { error: new Error('claim failed', { cause: error }) });
    });

    // Assess
    expect(lines).toHaveLength(3);
    for (const line of lines) expect(JSON.stringify(line)).not.toContain(SECRET);
    const logged = {
      name: 'ConditionalCheckFailedException',
      message: error.message,
      http_status: 400,
      request_id: error.$metadata.requestId,
      stack: expect.stringContaining('ConditionalCheckFailedException'),
    };
    expect(lines[0]?.error).toEqual(logged);
    expect(lines[1]?.error).toEqual(logged);
    expect(lines[2]?.error).toMatchObject({ name: 'Error', message: 'claim failed', cause: logged });
  });

  it.each([
    ['an object', { Item: { body: SECRET } }, '[not logged]'],
    ['a string', 'plain words', 'plain words'],
  ])('logs a cause that is %s by what may be logged of it', async (_kind, cause, expected) => {
    const lines = await linesWritten(() => services.logger.error('failed', new Error('outer', { cause })));

    expect(lines[0]?.error).toMatchObject({ message: 'outer', cause: expected });
    expect(JSON.stringify(lines)).not.toContain(SECRET);
  });

  it("writes the same line as Powertools' default Logger otherwise", async () => {
    const plain = new Logger({ serviceName: 'retrysafe', logLevel: 'INFO' });

    const lines = await linesWritten(() => {
      plain.info('hello', { tool: 't' });
      services.logger.info('hello', { tool: 't' });
    });

    expect(Object.keys(lines[1] ?? {})).toEqual(Object.keys(lines[0] ?? {}));
    expect({ ...lines[1], timestamp: 0 }).toEqual({ ...lines[0], timestamp: 0 });
  });
});
