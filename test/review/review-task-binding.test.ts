/**
 * Review (fresh eye): a task-augmented tools/call answers a CreateTaskResult for whatever record is under
 * its key, not for the call that answered. A call that never ran (no time left: `unavailable`, nothing
 * claimed) but whose key holds *another* call (other arguments) is told "your task completed", and
 * tasks/result hands it the other call's receipt with idempotent: false.
 */
import { createWorld, identity, type World } from '../helpers/world';
import { mcpOf } from './review-mcp';

let world: World;
let rpc: ReturnType<typeof mcpOf>;
beforeAll(() => {
  world = createWorld();
  rpc = mcpOf(world);
});
afterAll(() => world.destroy());

const invoice = (key: string, amount: number) => ({ idempotency_key: key, customer: 'cus_ada', amount });
const NO_TIME = { getRemainingTimeInMillis: () => 0 };

describe('a task-augmented call is the task of the call that answered, or none', () => {
  it('a call that ran nothing (no time left) is not given the task of another call under its key', async () => {
    // prepare: the key holds a completed call with amount 4200
    const caller = identity();
    const first = await rpc(caller, 'tools/call', { name: 'create_invoice', arguments: invoice('k1', 4200) });
    expect(first.result.structuredContent).toMatchObject({ ok: true, idempotent: false });

    // act: the same key, OTHER arguments, asked as a task, with no time left (nothing is claimed or run)
    const plain = await rpc(caller, 'tools/call', { name: 'create_invoice', arguments: invoice('k1', 9999) }, NO_TIME);
    const asTask = await rpc(
      caller,
      'tools/call',
      { name: 'create_invoice', arguments: invoice('k1', 9999), task: {} },
      NO_TIME,
    );
    const result = asTask.result?.task
      ? await rpc(caller, 'tasks/result', { taskId: asTask.result.task.taskId })
      : undefined;

    // assess: without a task the call says unavailable (and its retry would say conflict) ...
    expect(plain.result.structuredContent).toMatchObject({ ok: false, error: { code: 'unavailable' } });
    // ... so as a task it must not be a completed task whose result is the 4200 invoice, idempotent: false
    expect({ task: asTask.result?.task?.status, result: result?.result?.structuredContent }).toEqual({
      task: undefined,
      result: undefined,
    });
  });
});

describe('the task read after the answer races other calls under the key', () => {
  it('a first attempt’s business error (released) is not answered with the task of the next call that claimed the key', async () => {
    // prepare: an invoice of the caller's; a refund of an invoice that does not exist will be refused
    // (not_found, attempt 1: the claim is released) — and right after that release, before the task is
    // read, another request under the same key refunds the real invoice.
    const caller = identity();
    const real = await world.seedInvoice(caller.tenant);
    let released = false;
    let other: Promise<unknown> | undefined;
    const name = 'fresh-after-release';
    world.client.middlewareStack.add(
      (next, context) => async (args) => {
        const out = await next(args);
        if (context.commandName === 'DeleteItemCommand' && !released) {
          released = true;
          other = rpc(caller, 'tools/call', {
            name: 'refund',
            arguments: { idempotency_key: 'r1', invoice_id: real.invoice_id, amount: real.amount },
          });
          await other;
        }
        return out;
      },
      { step: 'initialize', name },
    );

    // act
    let asTask: { result?: { task?: { taskId: string; status: string } }; error?: unknown };
    try {
      asTask = await rpc(caller, 'tools/call', {
        name: 'refund',
        arguments: { idempotency_key: 'r1', invoice_id: 'inv_missing', amount: 100 },
        task: {},
      });
    } finally {
      world.client.middlewareStack.remove(name);
    }
    const result = asTask.result?.task
      ? await rpc(caller, 'tasks/result', { taskId: asTask.result.task.taskId })
      : undefined;

    // assess: this call's answer was not_found (nothing done): no task, a JSON-RPC error
    expect(released).toBe(true);
    expect({ task: asTask.result?.task?.status, receipt: result?.result?.structuredContent?.receipt }).toEqual({
      task: undefined,
      receipt: undefined,
    });
  });
});
