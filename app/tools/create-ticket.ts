import { ConflictError, defineToolModule, derivedId } from 'retrysafe/tools';
import * as z from 'zod/mini';
import type { ToolServices } from '../services';

export const createTicketArgs = z.strictObject({
  title: z.string().check(z.minLength(1), z.maxLength(200), z.describe('One line that says what is wrong.')),
  body: z.optional(z.string().check(z.maxLength(10_000), z.describe('Details.'))),
});

/** `create_ticket`: client key; the ticket key is derived from it, like create_invoice's id. */
export const createTicket = defineToolModule({
  name: 'create_ticket',
  description:
    'Open a support ticket. Returns its ticket_key. An identical ticket (same title and body) within 10 minutes is the same ticket, whatever its key.',
  args: createTicketArgs,
  annotations: { destructiveHint: false, openWorldHint: false },
  receipt: z.strictObject({ ticket_key: z.string(), title: z.string(), status: z.literal('open') }),
  dedupeWindowSeconds: 10 * 60,
  access: { tickets: ['dynamodb:PutItem'] },
  async execute(args, { identity, downstreamKey, callId }, { tickets }: Pick<ToolServices, 'tickets'>) {
    const ticketKey = derivedId('tck', downstreamKey);
    const written = await tickets.create({
      tenant: identity.tenant,
      ticket_key: ticketKey,
      title: args.title,
      ...(args.body === undefined ? {} : { body: args.body }),
      status: 'open',
      created_at: new Date().toISOString(),
      created_by: callId,
    });
    const stored = written.written ? written.item : written.existing;
    if (!written.written && (stored.title !== args.title || stored.body !== args.body)) {
      throw new ConflictError('idempotency_key: already used with different arguments');
    }
    // The receipt says what the create did ("open"), not what the ticket became later.
    return {
      receipt: { ticket_key: stored.ticket_key, title: stored.title, status: 'open' },
      replayed: !written.written && stored.created_by !== callId,
    };
  },
});
