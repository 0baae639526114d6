import * as z from 'zod/mini';
import { fieldProblem } from '../idempotency/definition';
import type { EraseRequest } from './erase-tenant';

/** An erase request as an operator sends it (the admin Lambda's event, the CLI's flags). */
const eraseRequestSchema = z.strictObject({
  tenant: z.string().check(z.minLength(1), z.maxLength(256)),
  includeDomain: z.optional(z.boolean()),
  dryRun: z.optional(z.boolean()),
});

/** The request, or an error naming the field: an erase never starts on a malformed request. */
export function parseEraseRequest(input: unknown): EraseRequest {
  const parsed = eraseRequestSchema.safeParse(input);
  if (parsed.success) return parsed.data;
  throw new TypeError(fieldProblem(parsed.error, 'request'));
}
