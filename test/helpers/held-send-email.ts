import { sendEmailArgs } from '../../app/tools/send-email';
import { defineTool } from '../../lib/idempotency/tool';
import { gate } from './tools';

/**
 * A `send_email` whose every execution waits for `release` (after opening `started`): run it through
 * the runtime under a key, and the real send_email sees that key in flight — `pending` — until released.
 */
export function heldSendEmail() {
  const release = gate();
  const started = gate();
  const tool = defineTool({
    name: 'send_email',
    description: 'held',
    args: sendEmailArgs,
    annotations: { destructiveHint: false, openWorldHint: true },
    async execute(args) {
      started.open();
      await release.opened;
      return { receipt: { message_id: 'msg_held', to: args.to, subject: args.subject }, replayed: false };
    },
  });
  return { tool, started, release };
}
