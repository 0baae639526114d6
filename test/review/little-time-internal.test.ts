import type { Logger } from '@aws-lambda-powertools/logger';
import { tableName } from '../../app/tables';
import { DEFAULT_RECORD_ATTRIBUTES } from '../../lib/idempotency/protocol/record';
import { ToolRuntime } from '../../lib/idempotency/runtime';
import { noteTool } from '../helpers/tools';
import { createWorld, identity, type World } from '../helpers/world';

let world: World;
beforeAll(() => {
  world = createWorld();
});
afterAll(() => world.destroy());
afterEach(() => jest.restoreAllMocks());

describe('rule 7: no time left is unavailable, never internal', () => {
  it('answers a call with a couple of milliseconds left unavailable, not internal', async () => {
    const caller = identity();
    const { tool, execute } = noteTool('send_note');
    // A clock that moves one millisecond every time it is read: what a few ms of real work between
    // the runtime's deadline check and Powertools' claim look like, made deterministic.
    const real = Date.now.bind(Date);
    const start = real();
    let ticks = 0;
    jest.spyOn(Date, 'now').mockImplementation(() => start + ticks++);
    // A Lambda invoked with 3 ms of its budget left.
    const end = start + 3;
    const logged: unknown[] = [];
    const logger = { error: (_message: string, extra: unknown) => logged.push(extra) } as unknown as Logger;
    const runtime = new ToolRuntime({
      client: world.client,
      tableName: tableName('idempotency'),
      attributes: DEFAULT_RECORD_ATTRIBUTES,
      logger,
    });
    const result = await runtime.invoke(
      tool,
      caller,
      { idempotency_key: 'k1', text: 'hi' },
      { getRemainingTimeInMillis: () => end - Date.now() },
    );
    jest.restoreAllMocks();

    // At 43ce454 the cause is the persistence layer refusing Powertools' lock (now + max(1, time
    // left)) as not in the future: a plain Error, classified `internal`.
    expect(execute).not.toHaveBeenCalled();
    expect(result).toMatchObject({ ok: false, error: { code: 'unavailable' } });
  });
});
