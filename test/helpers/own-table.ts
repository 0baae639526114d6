import { randomUUID } from 'node:crypto';
import { CreateTableCommand, DeleteTableCommand, type DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { createDynamoDBClient } from '../../lib/store/client';
import { createTableInput } from '../../lib/store/create-tables';
import { IDEMPOTENCY_TABLE } from '../../lib/store/tables';

/**
 * An idempotency table of the suite's own, named in the environment before the suite builds its world or
 * server (call it at the top of the file, before the suite's own `beforeAll`): a tenant's erase takes every
 * record with no tenant as its own (a Powertools handler's; rule 6), so a suite that writes such records,
 * or erases and counts what it finds, keeps to a table no other suite writes. So does a suite that runs a
 * completer on the table's stream (`startDevServer` with a completer that passes, `LocalStreamFeed`): its
 * first read starts at the trim horizon, every record the run's earlier suites wrote. Its name.
 */
export function ownIdempotencyTable(prefix: string): string {
  const name = `${prefix}-${randomUUID().slice(0, 8)}`;
  let client: DynamoDBClient | undefined;
  let before: string | undefined;
  beforeAll(async () => {
    before = process.env[IDEMPOTENCY_TABLE.envVar];
    process.env[IDEMPOTENCY_TABLE.envVar] = name;
    client = createDynamoDBClient(process.env);
    await client.send(new CreateTableCommand(createTableInput(IDEMPOTENCY_TABLE, name)));
  });
  afterAll(async () => {
    await client?.send(new DeleteTableCommand({ TableName: name }));
    client?.destroy();
    // Called inside a describe, the suite's later blocks are back on the table they used before.
    if (before === undefined) delete process.env[IDEMPOTENCY_TABLE.envVar];
    else process.env[IDEMPOTENCY_TABLE.envVar] = before;
  });
  return name;
}
