import type { ReadName } from '../../app/reads';
import type { EntryName } from '../../lib/api/routes';
import type { TOOLS_WITH_FIXTURE } from '../fixtures/registry';
import type { Exercise } from './observed-access';

type Entry = EntryName<(typeof TOOLS_WITH_FIXTURE)[number], ReadName>;

async function seedInvoice({ services, tenant }: Exercise, invoiceId = 'inv_1'): Promise<void> {
  await services.invoices.create({
    tenant,
    invoice_id: invoiceId,
    customer: 'c',
    amount: 500,
    currency: 'usd',
    created_at: new Date().toISOString(),
  });
}

async function seedTicket({ services, tenant }: Exercise): Promise<void> {
  await services.tickets.create({
    tenant,
    ticket_key: 'tck_1',
    title: 't',
    status: 'open',
    created_at: new Date().toISOString(),
  });
}

/**
 * For every entry point (the type requires one per entry, so a new tool without an exercise does not
 * compile): calls that walk each code path it has — first execution, replay, business errors that
 * release the claim — so the recorded actions are all the actions its code can send.
 */
export const ACCESS_EXERCISES: Readonly<Record<Entry, (exercise: Exercise) => Promise<void>>> = {
  async create_invoice(e) {
    e.record();
    await e.call('POST', '/tools/create_invoice', { idempotency_key: 'k1', customer: 'c', amount: 100 });
    await e.call('POST', '/tools/create_invoice', { idempotency_key: 'k1', customer: 'c', amount: 100 });
  },
  async refund(e) {
    await seedInvoice(e);
    e.record();
    await e.call('POST', '/tools/refund', { idempotency_key: 'k1', invoice_id: 'inv_1', amount: 500 });
    await e.call('POST', '/tools/refund', { idempotency_key: 'k2', invoice_id: 'inv_1', amount: 500 });
    await e.call('POST', '/tools/refund', { idempotency_key: 'k3', invoice_id: 'inv_missing', amount: 500 });
  },
  async create_ticket(e) {
    e.record();
    await e.call('POST', '/tools/create_ticket', { idempotency_key: 'k1', title: 't' });
  },
  async close_ticket(e) {
    await seedTicket(e);
    e.record();
    await e.call('POST', '/tools/close_ticket', { idempotency_key: 'k1', ticket_key: 'tck_1', resolution: 'r' });
    await e.call('POST', '/tools/close_ticket', { idempotency_key: 'k2', ticket_key: 'tck_1', resolution: 'r' });
    await e.call('POST', '/tools/close_ticket', { idempotency_key: 'k3', ticket_key: 'tck_404', resolution: 'r' });
  },
  async send_email(e) {
    e.record();
    await e.call('POST', '/tools/send_email', { idempotency_key: 'k1', to: 'a@example.com', subject: 's', body: 'b' });
  },
  async send_reminder(e) {
    e.record();
    await e.call('POST', '/tools/send_reminder', { idempotency_key: 'k1', to: 'a@example.com', text: 't' });
  },
  async get_operation(e) {
    e.record();
    await e.call('GET', '/tools/create_invoice/operations/k1');
  },
  async get_invoice(e) {
    await seedInvoice(e);
    e.record();
    await e.call('GET', '/invoices/inv_1');
  },
  async get_ticket(e) {
    await seedTicket(e);
    e.record();
    await e.call('GET', '/tickets/tck_1');
  },
  async list_tools(e) {
    e.record();
    await e.call('GET', '/tools');
  },
  async health(e) {
    e.record();
    await e.call('GET', '/health');
  },
  async mcp(e) {
    await seedInvoice(e);
    await seedTicket(e);
    const call = (name: string, args: Record<string, unknown>) =>
      e.call('POST', '/mcp', { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name, arguments: args } });
    e.record();
    await call('create_invoice', { idempotency_key: 'k1', customer: 'c', amount: 100 });
    await call('refund', { idempotency_key: 'k1', invoice_id: 'inv_1', amount: 500 });
    await call('refund', { idempotency_key: 'k2', invoice_id: 'inv_missing', amount: 500 });
    await call('create_ticket', { idempotency_key: 'k1', title: 't' });
    await call('close_ticket', { idempotency_key: 'k1', ticket_key: 'tck_1', resolution: 'r' });
    await call('send_email', { idempotency_key: 'k1', to: 'a@example.com', subject: 's', body: 'b' });
    await call('send_email', { idempotency_key: 'k2', to: 'a@example.com', subject: 's', body: 'b' });
    await call('send_reminder', { idempotency_key: 'k1', to: 'a@example.com', text: 't' });
    await call('get_invoice', { invoice_id: 'inv_1' });
    await call('get_ticket', { ticket_key: 'tck_1' });
    await call('get_operation', { tool: 'refund', idempotency_key: 'k1' });
  },
  async openapi(e) {
    e.record();
    await e.call('GET', '/openapi.json');
  },
  async not_found(e) {
    e.record();
    await e.call('GET', '/nowhere');
  },
};
