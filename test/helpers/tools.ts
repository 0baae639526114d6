import { randomUUID } from 'node:crypto';
import * as z from 'zod/mini';
import { defineTool, type Execution, type ToolContext } from '../../lib/idempotency/tool';
import type { JsonObject } from '../../lib/idempotency/types';

export const noteArgs = z.strictObject({ text: z.string().check(z.minLength(1)) });
export type NoteArgs = z.output<typeof noteArgs>;

/**
 * A client-key tool whose domain logic the test supplies: by default it "sends a note" and returns a
 * fresh id, so every real execution is visible as a new id and as a call of the returned mock.
 */
export function noteTool(
  name = 'send_note',
  behaviour?: (args: NoteArgs, context: ToolContext) => Promise<Execution<JsonObject>>,
  options: { ttlSeconds?: number; dedupeWindowSeconds?: number; longRunning?: boolean } = {},
) {
  const execute = jest.fn(
    behaviour ??
      (async (args: NoteArgs) => ({ receipt: { note_id: `note_${randomUUID()}`, text: args.text }, replayed: false })),
  );
  const tool = defineTool({
    name,
    description: 'Test tool: sends a note.',
    args: noteArgs,
    annotations: { destructiveHint: false, openWorldHint: false },
    ...options,
    execute,
  });
  return { tool, execute };
}

/** A promise and the function that settles it: holds a call "in flight" for as long as a test wants. */
export function gate(): { opened: Promise<void>; open: () => void } {
  let open!: () => void;
  const opened = new Promise<void>((resolve) => {
    open = resolve;
  });
  return { opened, open };
}

/** Gates opened in turn: `started()` opens the gate of the n-th run, `reached(n)` waits until run n started. */
export function runGates(count: number) {
  const gates = Array.from({ length: count }, () => gate());
  let runs = 0;
  return {
    /** Called by the tool at the start of each run: opens that run's gate, returns its number (1-based). */
    started(): number {
      runs += 1;
      gates[runs - 1]?.open();
      return runs;
    },
    reached(n: number): Promise<void> {
      return gates[n - 1]!.opened;
    },
    get runs() {
      return runs;
    },
  };
}

/** send_note as a later deploy defines it: the text must now be at least 5 characters (a stored "hi" no longer parses). */
export function tightenedSendNote() {
  const execute = jest.fn(async () => ({ receipt: { note_id: 'n' }, replayed: false }));
  const tool = defineTool({
    name: 'send_note',
    description: 'send_note after a deploy: the text must now be at least 5 characters',
    args: z.strictObject({ text: z.string().check(z.minLength(5)) }),
    annotations: { destructiveHint: false, openWorldHint: false },
    execute,
  });
  return { tool, execute };
}
