/** Review (fresh eye): task ids and lookups that held. */
import { createWorld, identity, type World } from '../helpers/world';
import { mcpOf } from './review-mcp';

let world: World;
let rpc: ReturnType<typeof mcpOf>;
beforeAll(() => {
  world = createWorld();
  rpc = mcpOf(world);
});
afterAll(() => world.destroy());

const invoice = (key: string) => ({ idempotency_key: key, customer: 'cus_ada', amount: 4200 });

it('a key with every awkward printable character round-trips through its task id', async () => {
  const caller = identity();
  const key = `a.b@c"d\\e/f+=%~ .${'x'.repeat(220)}`;
  const created = await rpc(caller, 'tools/call', { name: 'create_invoice', arguments: invoice(key), task: {} });
  const got = await rpc(caller, 'tasks/get', { taskId: created.result.task.taskId });
  const result = await rpc(caller, 'tasks/result', { taskId: created.result.task.taskId });
  expect(got.result.status).toBe('completed');
  expect(result.result.structuredContent.key).toBe(key);
});

it('another tenant, another user, a forged huge id and an unknown id all answer the same not-found', async () => {
  const caller = identity();
  const created = await rpc(caller, 'tools/call', { name: 'create_invoice', arguments: invoice('k'), task: {} });
  const taskId = created.result.task.taskId as string;
  const huge = `rs1.${Buffer.from(JSON.stringify(['create_invoice', 'k'.repeat(40_000)])).toString('base64url')}.x`;
  const answers = await Promise.all([
    rpc(identity(), 'tasks/get', { taskId }),
    rpc({ tenant: caller.tenant, user: 'bob' }, 'tasks/result', { taskId }),
    rpc(caller, 'tasks/get', { taskId: huge }),
    rpc(caller, 'tasks/get', { taskId: `${taskId.slice(0, -3)}abc` }),
    rpc(caller, 'tasks/get', { taskId: 'rs1.W10.x' }),
  ]);
  expect(answers.map((a) => a.error)).toEqual(
    Array(5).fill({ code: -32602, message: 'Failed to retrieve task: Task not found' }),
  );
});
