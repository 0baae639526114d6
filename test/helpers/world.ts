import { randomUUID } from 'node:crypto';
import type { Invoice } from '../../app/domain/invoices';
import type { Movement } from '../../app/payments/provider';
import { createServices } from '../../app/services';
import { TOOLS } from '../../app/tools';
import { createProtocolWorld } from './protocol-world';

export { deadline, identity, newTenant } from './protocol-world';

/**
 * The real services against DynamoDB Local, plus the reads a test needs to assess what changed in
 * the world (ledger rows, invoices, idempotency records), not just what the tool answered.
 */
export function createWorld() {
  const services = createServices(process.env);
  const tools = Object.fromEntries(TOOLS.map((tool) => [tool.name, tool.bind(services)]));

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

  return {
    ...services,
    // The protocol's world over these services: its runtime, idempotency table, records and `destroy`.
    ...createProtocolWorld(services),
    tools,
    refund: tools.refund!,
    seedInvoice,
    ledgerRows,
  };
}

export type World = ReturnType<typeof createWorld>;
