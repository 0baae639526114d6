// Types only: the registered tools' argument and receipt types, for `RetrysafeClient<RetrysafeTools>`.
// Every import is `import type`, so no server code (zod, Powertools, DynamoDB) reaches the client's runtime.
import type * as z from 'zod/mini';
import type { closeTicket } from '../tools/close-ticket';
import type { createInvoice } from '../tools/create-invoice';
import type { createTicket } from '../tools/create-ticket';
import type { refund } from '../tools/refund';
import type { ToolName } from '../tools/registry';
import type { sendEmail } from '../tools/send-email';
import type { ToolModule } from '../tools/tool-module';
import type { ToolTypes } from './types';

/**
 * A tool module's types: `args` is the zod schema's *input* (what a caller may send: defaults are
 * optional), `receipt` the receipt its `execute` returns — the one stored and replayed.
 */
export type ToolTypesOf<M> = M extends ToolModule<string, infer S, infer R> ? ToolTypes<z.input<S>, R> : never;

/**
 * Checks the map against the registry: a registered tool missing here, or a name here that the
 * registry does not serve, fails to compile. (The registry's own entries are typed wide, so the
 * modules are named here; the compiler keeps the two lists equal.)
 */
type Registered<M extends { readonly [N in ToolName]: ToolTypes<object, object> }> =
  Exclude<keyof M, ToolName> extends never ? M : never;

/** Every tool retrysafe serves, by name, with its argument and receipt types. */
export type RetrysafeTools = Registered<{
  readonly create_invoice: ToolTypesOf<typeof createInvoice>;
  readonly refund: ToolTypesOf<typeof refund>;
  readonly create_ticket: ToolTypesOf<typeof createTicket>;
  readonly close_ticket: ToolTypesOf<typeof closeTicket>;
  readonly send_email: ToolTypesOf<typeof sendEmail>;
}>;
