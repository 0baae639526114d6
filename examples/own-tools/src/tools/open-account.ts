import { defineToolModule, derivedId, InvalidArgsError } from 'retrysafe/tools';
import * as z from 'zod/mini';
import type { Services } from '../services';

/**
 * `open_account`: one account per external id, ever. Natural key `external_id`: whatever client key an
 * agent sends, a second call for the same external id returns the first receipt.
 */
export const openAccount = defineToolModule({
  name: 'open_account',
  description: 'Open a customer account for an external id. One account per external_id: repeating it returns the first.',
  args: z.strictObject({
    external_id: z.string().check(z.minLength(1), z.maxLength(128), z.describe("The customer's id in the CRM.")),
    name: z.string().check(z.minLength(1), z.maxLength(200)),
  }),
  annotations: { destructiveHint: false, openWorldHint: false },
  naturalKey: ['external_id'],
  receipt: z.strictObject({ account_id: z.string(), external_id: z.string(), name: z.string() }),
  access: { accounts: ['dynamodb:PutItem'] },
  async execute(args, context, { accounts }: Pick<Services, 'accounts'>) {
    // Whoever opened the account (the natural key's downstream key is the same for every caller), the one
    // whose callId it is stamped with is told it executed; every other call replays.
    const { item: account, replayed } = await accounts.open(
      {
        tenant: context.identity.tenant,
        external_id: args.external_id,
        account_id: derivedId('acc', context.downstreamKey),
        name: args.name,
      },
      context,
    );
    if (account.name !== args.name) {
      throw new InvalidArgsError(`name: account ${account.external_id} was opened as ${account.name}`);
    }
    const receipt = { account_id: account.account_id, external_id: account.external_id, name: account.name };
    return { receipt, replayed };
  },
});
