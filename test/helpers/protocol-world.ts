import { randomUUID } from 'node:crypto';
import { paginateScan } from '@aws-sdk/lib-dynamodb';
import { idempotencyTable } from '../../lib/idempotency/protocol/table';
import { ToolRuntime, type ToolRuntimeOptions } from '../../lib/idempotency/runtime';
import type { Identity, InvocationDeadline } from '../../lib/idempotency/types';
import { type CoreServices, createCoreServices } from '../../lib/lambda/core-services';
import { createToolRuntime } from '../../lib/lambda/runtime';
import { idempotencyTableName } from '../../lib/store/tables';

/**
 * The world of the protocol's tests (lib/idempotency: claim, takeover, intent, settle, erase, the completer's
 * decisions): DynamoDB Local's idempotency table and the runtime over it, as an entry point composes them
 * (lib/lambda) — and no example app. The tools are the test's own (test/helpers/tools.ts `noteTool`,
 * test/fixtures/tools), so a change to app/ cannot break a protocol test. App-level tests use
 * test/helpers/world.ts, whose world is this one over the example's services, plus the example's tools and reads.
 */
export function createProtocolWorld(
  { client, documents, logger }: Pick<CoreServices, 'client' | 'documents' | 'logger'> = createCoreServices(
    process.env,
  ),
) {
  const table = idempotencyTable({ client, tableName: idempotencyTableName(process.env) });

  /** The tenant's idempotency records (a consistent, filtered Scan: the table has no tenant index). */
  async function idempotencyRecordKeys(tenant: string): Promise<Array<{ id: string; tenant: string; tool: string }>> {
    const items: Array<{ id: string; tenant: string; tool: string }> = [];
    const pages = paginateScan(
      { client: documents },
      {
        TableName: table.tableName,
        FilterExpression: 'tenant = :tenant',
        ProjectionExpression: 'id, tenant, tool',
        ExpressionAttributeValues: { ':tenant': tenant },
        ConsistentRead: true,
      },
    );
    for await (const page of pages)
      items.push(...((page.Items ?? []) as Array<{ id: string; tenant: string; tool: string }>));
    return items;
  }

  return {
    client,
    /** The runtime as an entry point builds it (lib/lambda/runtime.ts): its logger, call log and store deadline. */
    runtime: createToolRuntime({ client, logger }),
    idempotencyRecordKeys,
    /** The idempotency table as the protocol's transitions take it (protocol/), for tests that drive them. */
    idempotencyTable: table,
    /** A bare runtime on the idempotency table (no logger or hook unless given): for tests of the runtime itself. */
    idempotencyRuntime: (options: Omit<ToolRuntimeOptions, 'client' | 'tableName' | 'attributes'> = {}) =>
      new ToolRuntime({ ...table, ...options }),
    destroy: () => client.destroy(),
  };
}

export type ProtocolWorld = ReturnType<typeof createProtocolWorld>;

/** A deadline like a Lambda context's: `ms` from now, counting down in real time. */
export function deadline(ms = 10_000): InvocationDeadline {
  const end = Date.now() + ms;
  return { getRemainingTimeInMillis: () => end - Date.now() };
}

/** A tenant no other test uses, so suites share one DynamoDB Local without seeing each other. */
export function newTenant(label = 't'): string {
  return `${label}-${randomUUID()}`;
}

export function identity(tenant = newTenant(), user = 'ada'): Identity {
  return { tenant, user };
}
