import { defineToolModule } from 'retrysafe/tools';
import * as z from 'zod/mini';
import type { Services } from '../services';

/**
 * `push_contact`: write a contact to the CRM, an outside API. The effect is the CRM's, so it runs under
 * the call's downstream key as the CRM's idempotency key: a retry after a crash, or the completer, meets
 * the first request's result at the CRM instead of writing the contact twice. While the CRM still runs
 * the first request the call is `pending`.
 */
export const pushContact = defineToolModule({
  name: 'push_contact',
  description: 'Write a contact to the CRM. Once per idempotency_key; pending while the CRM is still writing it.',
  args: z.strictObject({
    external_id: z.string().check(z.minLength(1), z.maxLength(128)),
    name: z.string().check(z.minLength(1), z.maxLength(200)),
  }),
  annotations: { destructiveHint: false, openWorldHint: true },
  receipt: z.strictObject({ crm_id: z.string(), external_id: z.string(), name: z.string() }),
  access: {},
  async execute(args, { downstreamKey }, { crm }: Pick<Services, 'crm'>) {
    const contact = await crm.upsertContact(args, downstreamKey);
    // The downstream key is this call's alone (client key only): whatever the CRM answers under it is
    // this call's own effect, made by this attempt or by an earlier one that died — never a replay.
    return { receipt: { crm_id: contact.crm_id, external_id: contact.external_id, name: contact.name }, replayed: false };
  },
});
