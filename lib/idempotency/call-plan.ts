/** What one attempt of a call works from (attempt.ts), as the runtime plans it (runtime.ts). */
import type { Logger } from '@aws-lambda-powertools/logger';
import type * as z from 'zod/mini';
import type { Attachment } from './attach';
import type { IdempotencyTable } from './protocol/table';
import type { ToolDefinition } from './tool';
import type { Identity, JsonObject } from './types';

/** Everything one attempt works from, fixed before it claims. */
export interface CallPlan<S extends z.ZodMiniObject = z.ZodMiniObject, R extends JsonObject = JsonObject> {
  readonly table: IdempotencyTable;
  readonly tool: ToolDefinition<S, R>;
  readonly identity: Identity;
  readonly clientKey: string;
  readonly args: z.output<S>;
  /** The record key: `<tool>#<hash of tenant, user, client key>`. */
  readonly recordKey: string;
  /** The arguments' fingerprint, and its validation hash stored on the record. */
  readonly fingerprint: string;
  readonly validation: string;
  readonly ttlSeconds: number;
  /** The attempt's lock: its invocation's deadline, read once. */
  readonly lockEndsMs: number;
  /** Take over exactly this claim (the completer), or undefined (a caller: claim, or take over). */
  readonly resume: string | undefined;
  /** A fresh claim is parked unrun, for the completer to run (`InvokeOptions.handOff`). */
  readonly handOff: boolean | undefined;
  /** How a caller refused by a live attempt of the same call waits for its outcome (attach.ts). */
  readonly attach: Attachment;
  readonly logger: Logger | undefined;
}
