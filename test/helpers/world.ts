import { randomUUID } from 'node:crypto';
import { paginateScan } from '@aws-sdk/lib-dynamodb';
import type { Invoice } from '../../app/domain/invoices';
import type { Movement } from '../../app/payments/provider';
import { createServices } from '../../app/services';
import { tableName } from '../../app/tables';
import { TOOLS } from '../../app/tools';
import { DEFAULT_RECORD_ATTRIBUTES } from '../../lib/idempotency/protocol/record';
import type { IdempotencyTable } from '../../lib/idempotency/protocol/table';
import { ToolRuntime, type ToolRuntimeOptions } from '../../lib/idempotency/runtime';
import type { Identity, InvocationDeadline } from '../../lib/idempotency/types';
import { createToolRuntime } from '../../lib/lambda/runtime';

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

/**
 * The real services against DynamoDB Local, plus the reads a test needs to assess what changed in
 * the world (ledger rows, invoices, idempotency records), not just what the tool answered.
 */
export function createWorld() {
  const services = createServices(process.env);
  const runtime = createToolRuntime(services);
  const tools = Object.fromEntries(TOOLS.map((tool) => [tool.name, tool.bind(services)]));
  const { documents } = services;

  async function seedInvoice(tenant: string, overrides: Partial<Invoice> = {}): Promise<Invoice> {
    const invoice: Invoice = {
      tenant,
      invoice_id: `inv_${randomUUID().slice(0, 8)}`,
      customer: 'cus_ada',
      amount: 4_200,
      currency: 'usd',
      created_at: new Date().toISOString(),
      ...overrides,
    };
    await services.invoices.create(invoice);
    return invoice;
  }

  function ledgerRows(tenant: string): Promise<Movement[]> {
    return services.ledger.movements(tenant);
  }

  /** The tenant's idempotency records (a consistent, filtered Scan: the table has no tenant index). */
  async function idempotencyRecordKeys(tenant: string): Promise<Array<{ id: string; tenant: string; tool: string }>> {
    const items: Array<{ id: string; tenant: string; tool: string }> = [];
    const pages = paginateScan(
      { client: documents },
      {
        TableName: tableName('idempotency'),
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
    ...services,
    runtime,
    tools,
    refund: tools.refund!,
    seedInvoice,
    ledgerRows,
    idempotencyRecordKeys,
    /** The idempotency table as the protocol's transitions take it (protocol/), for tests that drive them. */
    idempotencyTable: {
      client: services.client,
      tableName: tableName('idempotency'),
      attributes: DEFAULT_RECORD_ATTRIBUTES,
    } satisfies IdempotencyTable,
    /** A bare runtime on the idempotency table (no logger or hook unless given): for tests of the runtime itself. */
    idempotencyRuntime: (options: Omit<ToolRuntimeOptions, 'client' | 'tableName' | 'attributes'> = {}) =>
      new ToolRuntime({
        client: services.client,
        tableName: tableName('idempotency'),
        attributes: DEFAULT_RECORD_ATTRIBUTES,
        ...options,
      }),
    destroy: () => services.client.destroy(),
  };
}

export type World = ReturnType<typeof createWorld>;
