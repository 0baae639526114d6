// Rule 5 (docs/state-machine.md): exactly one answer per effect says idempotent: false — a task's answer is a replay.
/**
 * Task ids name what the server issued, byte for byte, in both eras: a commit mark (2025-11-25's, for the
 * task of the request that committed its call) carries its proof and is checked against the record; the
 * tasks extension issues none; any other spelling is the unknown id's -32602. Found by the review of
 * issue 35's fixes (helper-22), each first as a failing test.
 */
import { GetItemCommand, UpdateItemCommand } from '@aws-sdk/client-dynamodb';
import { recordKeyOf } from '../../lib/idempotency/derivation';
import { commitProofOf } from '../../lib/mcp/tasks';
import { idempotencyTableName } from '../../lib/store/tables';
import { startTestApi, type TestApi } from '../helpers/api';
import { email, heldCall as heldCallOn } from '../helpers/held-send-email';
import { modernRequest, postMcp } from '../helpers/raw-mcp';
import { newTenant } from '../helpers/world';

let api: TestApi;
beforeAll(async () => {
  api = await startTestApi();
});
afterAll(() => api.close());

/** One 2026-07-28 request, the tasks extension declared. */
function modern(token: string, method: string, params: Record<string, unknown>) {
  return modernRequest(api.url, token, method, params, { client: 'review' });
}

let rpcId = 0;
/** One raw 2025-11-25 (stateless) request. */
async function legacy(token: string, method: string, params: Record<string, unknown> = {}) {
  return (await postMcp(api.url, token, { jsonrpc: '2.0', id: ++rpcId, method, params })).body;
}

/** A send_email held in flight under `key` for `tenant`'s ada (`heldCall`). */
const heldCall = (tenant: string, key: string) => heldCallOn(api.runtime, tenant, key);

describe('a commit mark on a task id is the server’s to write: a forged one names no task (review F1; lib/mcp/tasks.ts taskNameOf, commitProofOf)', () => {
  it('extension: a task id the server never issued (its id + ".c") is answered as an unknown one, not as the call’s committing answer (idempotent: false)', async () => {
    const tenant = newTenant();
    const token = await api.token(tenant);
    const held = await heldCall(tenant, 'forged-c');
    const taskId = (await modern(token, 'tools/call', { name: 'send_email', arguments: email('forged-c') })).result
      .taskId as string;
    const own = await held.finish();

    const forged = await modern(token, 'tasks/get', { taskId: `${taskId}.c` });
    const unknown = await modern(token, 'tasks/get', { taskId: `${taskId}.x` });

    // The held request committed the effect and said so; nobody else may.
    expect(own).toMatchObject({ ok: true, idempotent: false });
    expect(taskId).not.toMatch(/\.c$/);
    expect(unknown.error).toMatchObject({ code: -32602 });
    // Rule 5: a second answer saying idempotent: false for the one email — or else the forged id must be unknown.
    expect(forged.result?.result?.structuredContent?.idempotent).not.toBe(false);
    expect(forged.error).toEqual(unknown.error);
  });

  it('2025-11-25: a replay’s task id with a mark, bare or with a proof made from what the id shows, is the unknown id: never a second idempotent: false', async () => {
    const tenant = newTenant();
    const token = await api.token(tenant);
    const held = await heldCall(tenant, 'forged-c-legacy');
    const created = await legacy(token, 'tools/call', {
      name: 'send_email',
      arguments: email('forged-c-legacy'),
      task: {},
    });
    const taskId = created.result.task.taskId as string;
    const own = await held.finish();

    const honest = await legacy(token, 'tasks/result', { taskId });
    const forged = await legacy(token, 'tasks/result', { taskId: `${taskId}.c` });
    // The best a client can make: the proof of the one id the task id shows, its call's instance.
    const instance = taskId.split('.')[2] ?? '';
    const madeUp = await legacy(token, 'tasks/result', { taskId: `${taskId}.c${commitProofOf(instance)}` });

    expect(own).toMatchObject({ ok: true, idempotent: false });
    expect(madeUp.error).toMatchObject({ code: -32602 });
    expect(taskId).not.toMatch(/\.c$/);
    expect(honest.result.structuredContent).toMatchObject({ ok: true, idempotent: true });
    // Rule 5: exactly one answer per effect says false — `own` did. The forged id must not be a second.
    expect(forged.result?.structuredContent?.idempotent).not.toBe(false);
  });

  // Review 3, T1: before 173c9b7 a call's instance was its first claim's id, and such records stay until
  // their TTL; for one committed on its first attempt the instance the task id shows hashes to the proof.
  it('2025-11-25: a record whose instance is its committing claim’s id (written before instances were ids of their own) proves no mark', async () => {
    const tenant = newTenant();
    const token = await api.token(tenant);
    const key = `old-instance-${Date.now()}`;
    const first = await api.post('/tools/create_ticket', token, { idempotency_key: key, title: 't', body: key });
    const id = recordKeyOf('create_ticket', [tenant, 'ada', key]);
    const { Item } = await api.services.client.send(
      new GetItemCommand({ TableName: idempotencyTableName(), Key: { id: { S: id } }, ConsistentRead: true }),
    );
    // As the version before 173c9b7 wrote it.
    await api.services.client.send(
      new UpdateItemCommand({
        TableName: idempotencyTableName(),
        Key: { id: { S: id } },
        UpdateExpression: 'SET call_id = :claim',
        ExpressionAttributeValues: { ':claim': { S: Item?.claim_id?.S ?? '' } },
      }),
    );

    const created = await legacy(token, 'tools/call', {
      name: 'create_ticket',
      arguments: { idempotency_key: key, title: 't', body: key },
      task: {},
    });
    const taskId = created.result.task.taskId as string;
    const instance = taskId.split('.')[2] ?? '';
    const forged = await legacy(token, 'tasks/result', { taskId: `${taskId}.c${commitProofOf(instance)}` });

    expect(first.body).toMatchObject({ ok: true, idempotent: false });
    expect(instance).toBe(Item?.claim_id?.S);
    expect(forged.error).toMatchObject({ code: -32602 });
  });
});

describe('only the id as issued names its task: a respelling base64url decoding forgives is unknown (review F6; lib/mcp/tasks.ts taskNameOf)', () => {
  it('tasks/get of an issued id with a character base64url decoding drops is answered as the unknown id, -32602', async () => {
    const tenant = newTenant();
    const token = await api.token(tenant);
    const held = await heldCall(tenant, 'respelled');
    const taskId = (await modern(token, 'tools/call', { name: 'send_email', arguments: email('respelled') })).result
      .taskId as string;
    await held.finish();
    const [version, named, instance] = taskId.split('.');

    const respelled = await modern(token, 'tasks/get', { taskId: `${version}.${named}=!.${instance}` });
    const issued = await modern(token, 'tasks/get', { taskId });

    expect(issued.result).toMatchObject({ status: 'completed' });
    // Not an id the server gave out: the same -32602 as any unknown id.
    expect(respelled.error).toMatchObject({ code: -32602 });
  });
});
