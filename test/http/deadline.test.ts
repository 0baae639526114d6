// Rule 7 (docs/state-machine.md): no time left is unavailable, never internal.
import { createServer, type Server, type Socket } from 'node:net';
import * as z from 'zod/mini';
import { TOOLS } from '../../app/tools';
import { derivedId } from '../../lib/idempotency/definition';
import { defineToolModule } from '../../lib/tools/tool-module';
import { startTestApi } from '../helpers/api';
import { gate } from '../helpers/tools';
import { newTenant } from '../helpers/world';

const TIMEOUT_MS = 1_500;

describe('the invocation deadline, locally as on Lambda', () => {
  it('answers a JSON 504 at the deadline, and the late handler can no longer write anywhere', async () => {
    // Prepare: a tool that is still working when the invocation's time is up, then tries to write.
    const release = gate();
    const attempted = gate();
    let lateWrite: unknown;
    const slowNote = defineToolModule({
      name: 'slow_note',
      description: 'Test tool: writes an outbox item after a pause.',
      args: z.strictObject({ text: z.string() }),
      annotations: { destructiveHint: false, openWorldHint: false },
      access: { outbox: ['dynamodb:PutItem'] },
      async execute(args, { identity, downstreamKey }, { outbox }) {
        await release.opened;
        try {
          await outbox.create({
            tenant: identity.tenant,
            message_id: derivedId('late', downstreamKey),
            to: 'a@example.com',
            subject: 'late',
            body: args.text,
            status: 'queued',
            queued_at: new Date().toISOString(),
          });
        } catch (error) {
          lateWrite = error;
        } finally {
          attempted.open();
        }
        return { receipt: { text: args.text }, replayed: false };
      },
    });
    const logLevel = process.env.POWERTOOLS_LOG_LEVEL;
    process.env.POWERTOOLS_LOG_LEVEL = 'WARN'; // the suite's default is SILENT: this test reads the log
    const api = await startTestApi({ tools: [...TOOLS, slowNote], timeoutMs: TIMEOUT_MS });
    process.env.POWERTOOLS_LOG_LEVEL = logLevel;
    const tenant = newTenant();

    const logged: Array<Record<string, unknown>> = [];
    const capture = (chunk: unknown) => {
      for (const line of String(chunk).split('\n').filter(Boolean)) {
        try {
          logged.push(JSON.parse(line));
        } catch {
          // not a log line
        }
      }
      return true;
    };
    // Powertools writes WARN and ERROR to stderr, the rest to stdout.
    const writes = [jest.spyOn(process.stdout, 'write'), jest.spyOn(process.stderr, 'write')];
    for (const write of writes) write.mockImplementation(capture);

    // Act
    const started = Date.now();
    const reply = await api.post('/tools/slow_note', await api.token(tenant), { idempotency_key: 'k1', text: 'hi' });
    const answeredAfter = Date.now() - started;
    release.open();
    await attempted.opened;
    // The late handler's own answer (nobody reads it) is logged once it settles.
    for (let waited = 0; waited < 3_000 && !logged.some((line) => line.tool === 'slow_note'); waited += 50) {
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    for (const write of writes) write.mockRestore();
    const messages = await api.services.outbox.list(tenant);
    await api.close();

    // Assess
    expect(reply.status).toBe(504);
    expect(reply.body).toEqual({ ok: false, error: { code: 'timeout', message: expect.stringMatching(/same key/) } });
    expect(answeredAfter).toBeGreaterThanOrEqual(TIMEOUT_MS - 50);
    expect(lateWrite).toMatchObject({ name: 'TimeoutError' });
    expect(messages).toEqual([]);
    // Running out of time is said once, as a warning without a stack — not a store failure at ERROR.
    const aboutTheCall = logged.filter((line) => line.tool === 'slow_note');
    expect(aboutTheCall).toEqual([
      expect.objectContaining({
        level: 'WARN',
        message: 'tool call ran out of time: it stays in flight for a retry with its key or the completer',
        code: 'unavailable',
      }),
    ]);
    expect(aboutTheCall[0]).not.toHaveProperty('error');
  });

  describe('in a brownout (DynamoDB accepts connections and never answers)', () => {
    let blackHole: Server;
    const sockets: Socket[] = [];
    let realEndpoint: string | undefined;
    beforeAll(async () => {
      blackHole = createServer((socket) => sockets.push(socket));
      await new Promise<void>((resolve) => blackHole.listen(0, '127.0.0.1', resolve));
      realEndpoint = process.env.DYNAMODB_ENDPOINT;
      const { port } = blackHole.address() as { port: number };
      process.env.DYNAMODB_ENDPOINT = `http://127.0.0.1:${port}`;
    });
    afterAll(async () => {
      process.env.DYNAMODB_ENDPOINT = realEndpoint;
      for (const socket of sockets) socket.destroy();
      await new Promise((resolve) => blackHole.close(resolve));
    });

    it('answers its own JSON 503 with Retry-After before the deadline, never a 504', async () => {
      const api = await startTestApi({ timeoutMs: 3_000 });

      const started = Date.now();
      const reply = await api.post('/tools/create_invoice', await api.token(newTenant()), {
        idempotency_key: 'k1',
        customer: 'c',
        amount: 1,
      });
      const answeredAfter = Date.now() - started;
      await api.close();

      expect(reply.status).toBe(503);
      expect(reply.headers.get('retry-after')).toBe('1');
      expect(reply.body).toMatchObject({ ok: false, error: { code: 'unavailable' } });
      expect(answeredAfter).toBeLessThan(3_000);
    }, 15_000);
  });
});
