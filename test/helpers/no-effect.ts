/**
 * What the suites of attempts that made no effect share (test/integration/unrun-attempts.test.ts,
 * no-effect-attempts.test.ts): a completer over the protocol world's table, a dedupe-window tool whose
 * customer is missing until created, and faults on the writes of a window's intent.
 */
import { randomUUID } from 'node:crypto';
import { GetItemCommand, UpdateItemCommand } from '@aws-sdk/client-dynamodb';
import { unmarshall } from '@aws-sdk/util-dynamodb';
import { Completer, type Recheck } from '../../lib/idempotency/completer';
import { NotFoundError } from '../../lib/idempotency/errors';
import { DEFAULT_RECORD_ATTRIBUTES } from '../../lib/idempotency/protocol/record';
import type { ToolRuntime } from '../../lib/idempotency/runtime';
import { beforeNext, throttled } from './intercept';
import { identity, type ProtocolWorld } from './protocol-world';
import { noteTool } from './tools';

type NoteTool = ReturnType<typeof noteTool>['tool'];

/** A completer of `tools` on the world's idempotency table (its rechecks sent nowhere: a test delivers them). */
export function completerOn(world: ProtocolWorld, runtime: ToolRuntime, tools: NoteTool[]) {
  return completerRecordingOn(world, runtime, tools).completer;
}

/** The same, with every batch of rechecks it sends kept in `sends` (when it would look again). */
export function completerRecordingOn(world: ProtocolWorld, runtime: ToolRuntime, tools: NoteTool[]) {
  const sends: Recheck[][] = [];
  const completer = new Completer({
    client: world.client,
    runtime,
    tools,
    queue: { send: async (rechecks) => void sends.push([...rechecks]) },
    tableName: world.idempotencyTable.tableName,
    attributes: DEFAULT_RECORD_ATTRIBUTES,
  });
  return { completer, sends };
}

/** Whether a request's key or item is a dedupe window's intent. */
export const isIntentWrite = (input: Record<string, unknown>) =>
  String(JSON.stringify(input.Key ?? input.Item ?? input.TransactItems)).includes('#intent#');

/** A dedupe-window tool whose customer does not exist until `createCustomer()` (not_found until then). */
export function missingCustomerTool(options: { longRunning?: boolean } = {}) {
  let customerExists = false;
  const { tool, execute } = noteTool(
    `nocustomer_${randomUUID().slice(0, 8)}`,
    async (args) => {
      if (!customerExists) throw new NotFoundError('customer: no such customer');
      return { receipt: { note_id: `note_${randomUUID()}`, text: args.text }, replayed: false };
    },
    { dedupeWindowSeconds: 600, ...options },
  );
  return {
    tool,
    execute,
    caller: identity(),
    createCustomer: () => {
      customerExists = true;
    },
  };
}

/** A write of a dedupe window's intent, by its transition (lib/idempotency/protocol/intent-writes.ts). */
export type IntentWrite = 'create' | 'replace' | 'release' | 'erase';

/**
 * Whether a request is the intent write `kind`: create, release and erase (to a marker of no tenant) are
 * UpdateItems, replace a PutItem.
 */
export function isIntentWriteOf(kind: IntentWrite, command: string | undefined, input: Record<string, unknown>) {
  if (!isIntentWrite(input)) return false;
  if (kind === 'replace') return command === 'PutItemCommand';
  if (command !== 'UpdateItemCommand') return false;
  const update = String(input.UpdateExpression);
  if (kind === 'erase') return update.includes('#tenant, #tool');
  return kind === 'create'
    ? String(input.ConditionExpression).startsWith('attribute_not_exists(#holder) AND')
    : update.startsWith('REMOVE #holder');
}

/** Every create or replace of a dedupe window's intent through the world's client is throttled, until `stop()`. */
export function throttleIntentPuts(world: ProtocolWorld): { stop(): void } {
  const name = `throttle-intents-${randomUUID()}`;
  world.client.middlewareStack.add(
    (next, context) => async (args) => {
      const input = args.input as Record<string, unknown>;
      if (
        isIntentWriteOf('create', context.commandName, input) ||
        isIntentWriteOf('replace', context.commandName, input)
      ) {
        throw throttled();
      }
      return next(args);
    },
    { step: 'initialize', name },
  );
  return { stop: () => world.client.middlewareStack.remove(name) };
}

/** The next `kind` write (create, replace, release) of a window's intent through the world's client fails as a throttle. */
export function throttleNextIntentWrite(world: ProtocolWorld, kind: IntentWrite): void {
  const name = `throttle-next-${randomUUID()}`;
  world.client.middlewareStack.add(
    (next, context) => async (args) => {
      if (isIntentWriteOf(kind, context.commandName, args.input as Record<string, unknown>)) {
        world.client.middlewareStack.remove(name);
        throw throttled();
      }
      return next(args);
    },
    { step: 'initialize', name },
  );
}

/** The next UpdateItem of a call record (not an intent's) through the world's client fails as a throttle. */
export function throttleNextRecordUpdate(world: ProtocolWorld): void {
  beforeNext(
    world.client,
    'UpdateItemCommand',
    async () => {
      throw throttled();
    },
    (input) => !isIntentWrite(input),
  );
}

/**
 * Leaves a call record as an earlier version queued it: `attempt` and `unrun_attempts` both `attempts`
 * (that version counted its queued parks in `unrun_attempts`), no `queued_attempts`.
 */
export async function asQueuedByAnEarlierVersion(world: ProtocolWorld, recordKey: string, attempts: number) {
  await world.client.send(
    new UpdateItemCommand({
      TableName: world.idempotencyTable.tableName,
      Key: { id: { S: recordKey } },
      UpdateExpression: 'SET #a = :n, #u = :n REMOVE #q',
      ExpressionAttributeNames: { '#a': 'attempt', '#u': 'unrun_attempts', '#q': 'queued_attempts' },
      ExpressionAttributeValues: { ':n': { N: String(attempts) } },
    }),
  );
}

/**
 * A dedupe-window tool idempotent by its downstream key (as a provider is): one effect per downstream key,
 * replayed under it; `not_found` until the customer exists.
 */
export function keyedMissingCustomerTool() {
  let customerExists = false;
  let failNext = false;
  const effects = new Map<string, string>();
  const { tool, execute } = noteTool(
    `keyed_${randomUUID().slice(0, 8)}`,
    async (args, context) => {
      if (failNext) {
        failNext = false;
        throw new Error('provider: 503 before any effect'); // a transient failure: the attempt counts as run
      }
      const found = effects.get(context.downstreamKey);
      if (found) return { receipt: { note_id: found, text: args.text }, replayed: true };
      if (!customerExists) throw new NotFoundError('customer: no such customer');
      const noteId = `note_${randomUUID()}`;
      effects.set(context.downstreamKey, noteId);
      return { receipt: { note_id: noteId, text: args.text }, replayed: false };
    },
    { dedupeWindowSeconds: 600 },
  );
  return {
    tool,
    execute,
    effects,
    caller: identity(),
    createCustomer: () => {
      customerExists = true;
    },
    failNextRun: () => {
      failNext = true;
    },
  };
}

/** The call records of `tenant` (not its intents), by key. */
export async function recordIdsOf(world: ProtocolWorld, tenant: string): Promise<string[]> {
  return (await world.idempotencyRecordKeys(tenant)).map((r) => r.id).filter((id) => !id.includes('#intent#'));
}

/** The intents of `tenant` held by a call (not markers: freed), by key. */
export async function intentIdsOf(world: ProtocolWorld, tenant: string): Promise<string[]> {
  const ids = (await world.idempotencyRecordKeys(tenant)).map((r) => r.id).filter((id) => id.includes('#intent#'));
  const held = await Promise.all(ids.map(async (id) => ((await itemOf(world, id))?.intent_owner ? id : undefined)));
  return held.filter((id): id is string => id !== undefined);
}

/** The items under intent keys of `tenant` — held intents and markers (freed: no holder) alike —, by key. */
export async function intentItemIdsOf(world: ProtocolWorld, tenant: string): Promise<string[]> {
  return (await world.idempotencyRecordKeys(tenant)).map((r) => r.id).filter((id) => id.includes('#intent#'));
}

async function itemOf(world: ProtocolWorld, id: string): Promise<Record<string, unknown> | undefined> {
  const { Item } = await world.client.send(
    new GetItemCommand({ TableName: world.idempotencyTable.tableName, Key: { id: { S: id } }, ConsistentRead: true }),
  );
  return Item ? unmarshall(Item) : undefined;
}

/**
 * The next `command` touching a window's intent is written by DynamoDB, but its answer is lost (a timeout
 * after the commit, the SDK's retries spent): the caller sees a transient error for a write that landed.
 */
export function landThenFailNextIntentWrite(world: ProtocolWorld, command: string): void {
  const name = `land-then-fail-${randomUUID()}`;
  world.client.middlewareStack.add(
    (next, context) => async (args) => {
      if (context.commandName === command && JSON.stringify(args.input).includes('#intent#')) {
        world.client.middlewareStack.remove(name);
        await next(args);
        throw throttled();
      }
      return next(args);
    },
    { step: 'initialize', name },
  );
}

/** The note id of a tool answer's receipt (a note tool's), or undefined. */
export const noteOf = (answer: unknown) => (answer as { receipt?: { note_id?: string } }).receipt?.note_id;

const WRITES = new Set([
  'PutItemCommand',
  'UpdateItemCommand',
  'DeleteItemCommand',
  'TransactWriteItemsCommand',
  'BatchWriteItemCommand',
]);

/** Every intent write sent through `world`'s client (its command name), until `stop()`. */
export function intentWritesOn(world: ProtocolWorld): { readonly writes: string[]; stop(): void } {
  const name = `count-intent-writes-${randomUUID()}`;
  const writes: string[] = [];
  world.client.middlewareStack.add(
    (next, context) => async (a) => {
      const command = context.commandName ?? '';
      if (WRITES.has(command) && isIntentWrite(a.input as Record<string, unknown>)) writes.push(command);
      return next(a);
    },
    { step: 'initialize', name },
  );
  return { writes, stop: () => world.client.middlewareStack.remove(name) };
}
