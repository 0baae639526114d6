import { defineToolModule, derivedId } from 'retrysafe/tools';
import * as z from 'zod/mini';
import type { Services } from '../services';

/**
 * `log_call`: log a sales call. Client key only: the same key is the same call (replayed); a new key is a
 * new call, even with the same summary.
 */
export const logCall = defineToolModule({
  name: 'log_call',
  description: 'Log a sales call with its summary. Once per idempotency_key.',
  args: z.strictObject({ summary: z.string().check(z.minLength(1), z.maxLength(2000)) }),
  annotations: { destructiveHint: false, openWorldHint: false },
  receipt: z.strictObject({ call_id: z.string(), summary: z.string() }),
  access: { calls: ['dynamodb:PutItem'] },
  async execute(args, context, { calls }: Pick<Services, 'calls'>) {
    // The id is derived from the downstream key: a crashed call's retry finds what it wrote, stamped with
    // its own callId, and is told it executed (replayed: false) — the one answer that says so.
    const { item: call, replayed } = await calls.log(
      { tenant: context.identity.tenant, call_id: derivedId('call', context.downstreamKey), summary: args.summary },
      context,
    );
    return { receipt: { call_id: call.call_id, summary: call.summary }, replayed };
  },
});
