import { ConflictError, defineToolModule, derivedId } from 'retrysafe/tools';
import * as z from 'zod/mini';
import type { ToolServices } from '../services';

export const sendEmailArgs = z.strictObject({
  to: z.email().check(z.maxLength(254), z.describe('Recipient address.')),
  subject: z.string().check(z.minLength(1), z.maxLength(200)),
  body: z.string().check(z.minLength(1), z.maxLength(20_000), z.describe('Plain text. Never logged.')),
});

/**
 * `send_email`: client key. The message id is derived from it; the message is queued once per id and
 * delivered once per id, so a crash between queueing and delivering is finished by the retry, not
 * repeated.
 */
export const sendEmail = defineToolModule({
  name: 'send_email',
  description:
    'Send an email. Delivered once per idempotency_key; an identical email (same to, subject, body) within 10 minutes is the same send, whatever its key.',
  args: sendEmailArgs,
  annotations: { destructiveHint: false, openWorldHint: true },
  receipt: z.strictObject({ message_id: z.string(), to: z.string(), subject: z.string() }),
  dedupeWindowSeconds: 10 * 60,
  access: { outbox: ['dynamodb:PutItem', 'dynamodb:UpdateItem'] },
  async execute(args, { identity, downstreamKey, callId }, { outbox }: Pick<ToolServices, 'outbox'>) {
    const queued = await outbox.create({
      tenant: identity.tenant,
      message_id: derivedId('msg', downstreamKey),
      to: args.to,
      subject: args.subject,
      body: args.body,
      status: 'queued',
      queued_at: new Date().toISOString(),
      created_by: callId,
    });
    const message = queued.written ? queued.item : queued.existing;
    if (message.to !== args.to || message.subject !== args.subject || message.body !== args.body) {
      throw new ConflictError('idempotency_key: already used with different arguments');
    }
    // The delivery is the commit: the call that delivered the message executed it.
    const deliveredBy = await outbox.deliver(identity.tenant, message.message_id, new Date().toISOString(), callId);
    return {
      receipt: { message_id: message.message_id, to: message.to, subject: message.subject },
      replayed: deliveredBy !== callId,
    };
  },
});
