// Rule 5 (docs/state-machine.md): exactly one answer per effect says idempotent: false.
// protocol/commit (today lib/store/put-if-absent.ts): a tool's one conditional write of its effect, as a tool
// file reaches it through createOnce (retrysafe/tools/dynamodb), which stamps the call and decides `replayed`.
import { randomUUID } from 'node:crypto';
import { type DynamoDBDocumentClient, PutCommand, QueryCommand } from '@aws-sdk/lib-dynamodb';
import * as z from 'zod/mini';
import { derivedId } from '../../lib/idempotency/definition';
import { putIfAbsent } from '../../lib/idempotency/protocol/commit';
import type { CoreServices } from '../../lib/lambda';
import { newTenant, startTestStore, type TestStore } from '../../lib/testing';
import { createOnce } from '../../lib/tools/dynamodb';
import { defineToolModule } from '../../lib/tools/tool-module';

const NOTES = {
  partitionKey: { name: 'tenant', type: 'S' },
  sortKey: { name: 'note_id', type: 'S' },
  defaultName: 'create-once-notes',
  tenantAttribute: 'tenant',
  callStamps: ['created_by'],
} as const;

let store: TestStore;
beforeAll(async () => {
  store = await startTestStore({ endpoint: process.env.DYNAMODB_ENDPOINT, tables: { notes: NOTES } });
});
afterAll(() => store.stop());

/** The notes services, as an app's entry point composes them. */
function noteServices({ documents, tableName }: CoreServices) {
  return { documents, notes: tableName('notes') };
}
type NoteServices = ReturnType<typeof noteServices>;

/** What the table really holds: a tenant's notes. */
async function notesOf(tenant: string) {
  const page = await store.core.documents.send(
    new QueryCommand({
      TableName: store.core.tableName('notes'),
      KeyConditionExpression: 'tenant = :tenant',
      ExpressionAttributeValues: { ':tenant': tenant },
      ConsistentRead: true,
    }),
  );
  return page.Items ?? [];
}

/** The document client, recording each command it sends. */
function recording(documents: DynamoDBDocumentClient) {
  const sent: Array<{ name: string; input: unknown }> = [];
  const client = {
    send(command: { constructor: { name: string }; input: unknown }) {
      sent.push({ name: command.constructor.name, input: command.input });
      return documents.send(command as PutCommand);
    },
  } as unknown as DynamoDBDocumentClient;
  return { client, sent };
}

const noteArgs = z.strictObject({ text: z.string().check(z.minLength(1)) });

/** A tool written the correct way: its note's id from the downstream key, created once with createOnce. */
const addNote = defineToolModule({
  name: 'add_note',
  description: 'Add a note. Once per idempotency_key.',
  args: noteArgs,
  annotations: { destructiveHint: false, openWorldHint: false },
  access: { notes: ['dynamodb:PutItem'] },
  async execute(args, context, { documents, notes }: NoteServices) {
    const { item, replayed } = await createOnce(documents, {
      table: notes,
      key: 'tenant',
      item: { tenant: context.identity.tenant, note_id: derivedId('note', context.downstreamKey), text: args.text },
      context,
    });
    return { receipt: { note_id: item.note_id, text: item.text }, replayed };
  },
});

/** The same tool written the old README's way: `replayed: !written`. A crashed call's retry says it replayed. */
const addNoteUnstamped = defineToolModule({
  name: 'add_note_unstamped',
  description: 'Add a note, answering replayed when the note was there already.',
  args: noteArgs,
  annotations: { destructiveHint: false, openWorldHint: false },
  access: { notes: ['dynamodb:PutItem'] },
  async execute(args, context, { documents, notes }: NoteServices) {
    const note = {
      tenant: context.identity.tenant,
      note_id: derivedId('note', context.downstreamKey),
      text: args.text,
    };
    const written = await putIfAbsent(documents, notes, 'tenant', note);
    const item = written.written ? written.item : written.existing;
    return { receipt: { note_id: item.note_id, text: item.text }, replayed: !written.written };
  },
});

/** A tool whose note's id is new on every run: each attempt of a call makes the effect again. */
const addNoteTwice = defineToolModule({
  name: 'add_note_twice',
  description: 'Add a note under a random id.',
  args: noteArgs,
  annotations: { destructiveHint: false, openWorldHint: false },
  access: { notes: ['dynamodb:PutItem'] },
  async execute(args, context, { documents, notes }: NoteServices) {
    const { item, replayed } = await createOnce(documents, {
      table: notes,
      key: 'tenant',
      item: { tenant: context.identity.tenant, note_id: `note_${randomUUID()}`, text: args.text },
      context,
    });
    return { receipt: { note_id: item.note_id, text: item.text }, replayed };
  },
});

describe('createOnce (retrysafe/tools/dynamodb)', () => {
  it('creates the item stamped with the call id in created_by, in one conditional PutItem', async () => {
    // Prepare
    const tenant = newTenant();
    const { client, sent } = recording(store.core.documents);
    const callId = randomUUID();

    // Act
    const created = await createOnce(client, {
      table: store.core.tableName('notes'),
      key: 'tenant',
      item: { tenant, note_id: 'n1', text: 'hello' },
      context: { callId },
    });

    // Assess
    expect(created).toEqual({ item: { tenant, note_id: 'n1', text: 'hello', created_by: callId }, replayed: false });
    expect(await notesOf(tenant)).toEqual([{ tenant, note_id: 'n1', text: 'hello', created_by: callId }]);
    expect(sent).toEqual([
      {
        name: 'PutCommand',
        input: {
          TableName: 'create-once-notes',
          Item: { tenant, note_id: 'n1', text: 'hello', created_by: callId },
          ConditionExpression: 'attribute_not_exists(#key)',
          ExpressionAttributeNames: { '#key': 'tenant' },
          ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
        },
      },
    ]);
  });

  it.each([
    ['the same call again (a retry after a crash)', false, 'same'],
    ['another call', true, 'other'],
  ] as const)(
    'finds the item there: %s answers replayed %s, in one round trip, nothing overwritten',
    async (_, replayed, who) => {
      // Prepare
      const tenant = newTenant();
      const firstCall = randomUUID();
      const table = store.core.tableName('notes');
      await createOnce(store.core.documents, {
        table,
        key: 'tenant',
        item: { tenant, note_id: 'n1', text: 'first' },
        context: { callId: firstCall },
      });
      const { client, sent } = recording(store.core.documents);

      // Act
      const found = await createOnce(client, {
        table,
        key: 'tenant',
        item: { tenant, note_id: 'n1', text: 'second' },
        context: { callId: who === 'same' ? firstCall : randomUUID() },
      });

      // Assess
      const first = { tenant, note_id: 'n1', text: 'first', created_by: firstCall };
      expect(found).toEqual({ item: first, replayed });
      expect(sent).toHaveLength(1);
      expect(await notesOf(tenant)).toEqual([first]);
    },
  );

  it('stamps the attribute it is told, and an item no call stamped is a replay', async () => {
    // Prepare
    const tenant = newTenant();
    const table = store.core.tableName('notes');
    await store.core.documents.send(
      new PutCommand({ TableName: table, Item: { tenant, note_id: 'seeded', text: 'by hand' } }),
    );
    const callId = randomUUID();

    // Act
    const opened = await createOnce(store.core.documents, {
      table,
      key: 'tenant',
      item: { tenant, note_id: 'n2', text: 'mine' },
      context: { callId },
      stampAttribute: 'opened_by',
    });
    const unstamped = await createOnce(store.core.documents, {
      table,
      key: 'tenant',
      item: { tenant, note_id: 'seeded', text: 'mine' },
      context: { callId },
    });

    // Assess
    expect(opened).toEqual({ item: { tenant, note_id: 'n2', text: 'mine', opened_by: callId }, replayed: false });
    expect(unstamped).toEqual({ item: { tenant, note_id: 'seeded', text: 'by hand' }, replayed: true });
  });

  it('in a tool: a worker that dies after the create, retried — the retry says idempotent: false, once', async () => {
    // Prepare
    const caller = { tenant: newTenant(), user: 'ada' };
    const tool = store.tool(addNote, noteServices);

    // Act
    const { whileLocked, retry, replay } = await tool.crashAndRetry({ idempotency_key: 'k1', text: 'hi' }, caller, {
      effects: async () => (await notesOf(caller.tenant)).length,
    });

    // Assess
    expect(whileLocked).toMatchObject({ ok: false, status: 'pending' });
    expect(retry).toMatchObject({ ok: true, idempotent: false, receipt: { text: 'hi' } });
    expect(replay).toEqual({ ...retry, idempotent: true });
    const notes = await notesOf(caller.tenant);
    expect(notes).toHaveLength(1);
    if (!retry.ok) throw new Error('unreachable');
    expect(notes[0]).toMatchObject({ note_id: retry.receipt.note_id });
  });
});

describe('crashAndRetry holds a tool to the rule', () => {
  it('fails a tool that answers replayed: !written — no answer says the effect was made', async () => {
    const caller = { tenant: newTenant(), user: 'ada' };
    const tool = store.tool(addNoteUnstamped, noteServices);

    const run = tool.crashAndRetry({ idempotency_key: 'k1', text: 'hi' }, caller);

    await expect(run).rejects.toThrow(
      /add_note_unstamped breaks the rule "exactly one answer per effect says idempotent: false — the call whose write committed the effect".*0 answer\(s\) did \(whileLocked: .*, retry: idempotent: true, replay: idempotent: true\)/,
    );
    expect(await notesOf(caller.tenant)).toHaveLength(1);
  });

  it('fails a tool whose retry makes the effect again, when the test counts the effects', async () => {
    const caller = { tenant: newTenant(), user: 'ada' };
    const tool = store.tool(addNoteTwice, noteServices);

    const run = tool.crashAndRetry({ idempotency_key: 'k1', text: 'hi' }, caller, {
      effects: async () => (await notesOf(caller.tenant)).length,
    });

    await expect(run).rejects.toThrow(
      "crashAndRetry: add_note_twice's effect must happen once per downstreamKey, however often a crashed call is run again: effects() counted 0 before, 1 after the crash (want 1), 2 after the retry and the replay (want 1).",
    );
    expect(await notesOf(caller.tenant)).toHaveLength(2);
  });
});
