import { marshall } from '@aws-sdk/util-dynamodb';
import { Completer, type Recheck } from '../../lib/idempotency/completer';
import { callRecordOf, DEFAULT_RECORD_ATTRIBUTES } from '../../lib/idempotency/protocol/record';
import type { ToolRuntime } from '../../lib/idempotency/runtime';
import type { ToolDefinition } from '../../lib/idempotency/tool';
import { readOperation } from '../../lib/reads/operation';
import { callRecords } from './call-records';
import { throttleNextRecordUpdate } from './no-effect';
import { ownIdempotencyTable } from './own-table';
import { createProtocolWorld, type identity, type ProtocolWorld } from './protocol-world';
import { noteTool } from './tools';

/** The stack's tool functions' timeout (`INVOCATION_TIMEOUT_SECONDS`): a resend's lock. */
export const RESEND_INVOCATION_MS = 10_000;

/** What a liveness review reads of a poll (`get_operation`), every field it may carry. */
export interface PolledOperation {
  readonly status?: string;
  readonly reason?: string;
  readonly retry_after_ms?: number;
  readonly gives_up?: string;
  readonly runs_anew?: boolean;
  readonly hint?: string;
}

/**
 * The world a liveness review suite (test/integration/liveness-review*.test.ts) runs in, on a table of its
 * own (`label`): a protocol world and its runtime, built before the suite's tests and destroyed after, the
 * clock restored after each — and the moves every such suite makes: the clock set to an instant, a record's
 * item and its schedule read, a completer over the suite's tools fed a record's stream image, a poll.
 * Call it at the top of the file; `world` and `runtime` are there from the suite's first `beforeAll` on.
 */
export function livenessWorld(label: string) {
  ownIdempotencyTable(label);
  let world: ProtocolWorld | undefined;
  let runtime: ToolRuntime | undefined;
  beforeAll(() => {
    world = createProtocolWorld();
    runtime = world.idempotencyRuntime();
  });
  afterAll(() => world?.destroy());
  afterEach(() => jest.restoreAllMocks());
  const built = () => {
    if (!world || !runtime) throw new Error('livenessWorld: read before its beforeAll ran');
    return { world, runtime };
  };
  return {
    get world(): ProtocolWorld {
      return built().world;
    },
    get runtime(): ToolRuntime {
      return built().runtime;
    },
    /** Every clock the code reads (`Date.now`) stands at `atMs` until the next call (or the test's end). */
    clockAt(atMs: number): void {
      jest.restoreAllMocks();
      jest.spyOn(Date, 'now').mockImplementation(() => atMs);
    },
    /** The item under `key` in the idempotency table, read consistently (`{}`: none). */
    itemOf(key: unknown): Promise<Record<string, unknown>> {
      const { world, runtime } = built();
      return callRecords(world, runtime).itemOf(String(key));
    },
    /** A call record's item as the completer's schedule reads it. */
    scheduleOf(item: Record<string, unknown>) {
      return callRecordOf(item, DEFAULT_RECORD_ATTRIBUTES)!;
    },
    /** A completer over `tools`, its rechecks collected in `sent` (the stack's queue). */
    completerFor(tools: readonly ToolDefinition[], sent: Recheck[] = []): Completer {
      const { world, runtime } = built();
      return new Completer({
        client: world.client,
        runtime,
        tools,
        queue: {
          send: async (rechecks) => {
            sent.push(...rechecks);
          },
        },
        tableName: world.idempotencyTable.tableName,
        attributes: DEFAULT_RECORD_ATTRIBUTES,
      });
    },
    /** The stack's stream: `item`'s image, now. */
    streamImage(completer: Completer, item: Record<string, unknown>) {
      return completer.onStream([
        {
          eventName: 'MODIFY',
          dynamodb: {
            Keys: marshall({ id: String(item.id) }),
            NewImage: marshall(item, { removeUndefinedValues: true }),
            SequenceNumber: String(Date.now()),
          },
        },
      ]);
    },
    /**
     * A note tool whose provider keeps every downstream key's effect (a key it has seen replays it); `mode.die`:
     * the worker dies before its store. Its effects by key, and the keys it ran under, in order.
     */
    dedupingNotes(options: { ttlSeconds: number; dedupeWindowSeconds: number }) {
      const effects = new Map<string, string>();
      const runs: string[] = [];
      const mode = { die: false };
      const { tool } = noteTool(
        `window_${Math.random().toString(36).slice(2, 10)}`,
        async (args, context) => {
          runs.push(context.downstreamKey);
          if (mode.die) throttleNextRecordUpdate(built().world); // the worker dies before its store
          const seen = effects.get(context.downstreamKey);
          if (seen) return { receipt: { note_id: seen, text: args.text }, replayed: true };
          const noteId = `note_${effects.size + 1}`;
          effects.set(context.downstreamKey, noteId);
          return { receipt: { note_id: noteId, text: args.text }, replayed: false };
        },
        options,
      );
      return { tool, effects, runs, mode };
    },
    /** `get_operation` of `caller`'s call of `tool` under `key`. */
    async poll(caller: ReturnType<typeof identity>, tool: string, key: string): Promise<PolledOperation> {
      return (await readOperation(
        { runtime: built().runtime, toolNames: [tool] },
        caller,
        tool,
        key,
      )) as PolledOperation;
    },
  };
}
