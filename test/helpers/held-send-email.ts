import { sendEmailArgs } from '../../app/tools/send-email';
import type { ToolRuntime } from '../../lib/idempotency/runtime';
import { defineTool } from '../../lib/idempotency/tool';
import { gate } from './tools';
import { deadline } from './world';

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

/** An email's arguments under `key`. */
export const email = (key: string) => ({ idempotency_key: key, to: 'a@example.com', subject: 's', body: 'b' });

/** A send_email held in flight under `key` for `tenant`'s ada, as another instance would run it. */
export async function heldCall(runtime: ToolRuntime, tenant: string, key: string) {
  const { tool, started, release } = heldSendEmail();
  const running = runtime.invoke(tool, { tenant, user: 'ada' }, email(key), deadline(8_000));
  await started.opened;
  return {
    async finish() {
      release.open();
      return running;
    },
  };
}
