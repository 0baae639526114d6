import { defineToolModule, InvalidArgsError, NotFoundError } from 'retrysafe/tools';
import * as z from 'zod/mini';
import { MAX_TICKET_KEY_LENGTH, type Ticket } from '../domain/tickets';
import type { ToolServices } from '../services';

export const closeTicketArgs = z.strictObject({
  ticket_key: z
    .string()
    .check(
      z.minLength(1),
      z.maxLength(MAX_TICKET_KEY_LENGTH),
      z.describe('The ticket to close, as returned by create_ticket.'),
    ),
  resolution: z.string().check(z.minLength(1), z.maxLength(2_000), z.describe('How it was resolved.')),
});

/** `close_ticket`. Natural key: `ticket_key` — one close per ticket, whichever client key. */
export const closeTicket = defineToolModule({
  name: 'close_ticket',
  description: 'Close a ticket with a resolution. One close per ticket: repeating it returns the first receipt.',
  args: closeTicketArgs,
  annotations: { destructiveHint: true, openWorldHint: false },
  naturalKey: ['ticket_key'],
  receipt: z.strictObject({ ticket_key: z.string(), status: z.literal('closed'), resolution: z.string() }),
  access: { tickets: ['dynamodb:UpdateItem'] },
  async execute(args, { identity, callId }, { tickets }: Pick<ToolServices, 'tickets'>) {
    const closed = await tickets.close(
      identity.tenant,
      args.ticket_key,
      args.resolution,
      new Date().toISOString(),
      callId,
    );
    if (!closed) throw new NotFoundError(`ticket_key: no ticket ${args.ticket_key}`);
    if (closed.written) return { receipt: receiptOf(closed.item), replayed: false };
    if (closed.existing.resolution !== args.resolution) {
      throw new InvalidArgsError(`resolution: ticket ${args.ticket_key} was already closed with another resolution`);
    }
    return { receipt: receiptOf(closed.existing), replayed: closed.existing.closed_by !== callId };
  },
});

function receiptOf(ticket: Ticket) {
  return { ticket_key: ticket.ticket_key, status: 'closed', resolution: ticket.resolution ?? '' };
}
