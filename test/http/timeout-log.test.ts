import * as z from 'zod/mini';
import { TOOLS } from '../../app/tools';
import { defineToolModule } from '../../lib/tools/tool-module';
import { startTestApi } from '../helpers/api';
import { gate } from '../helpers/tools';
import { newTenant } from '../helpers/world';

const TIMEOUT_MS = 1_500;
/** How long the tool keeps working after the caller was answered `timeout`. */
const OVERRUN_MS = 700;

describe('a call that outlives its invocation: its log line says what its caller got', () => {
  it('logs outcome `timeout` with the latency of the 504, not the late `unavailable` and the tool’s own time', async () => {
    // Prepare: a tool still working when the invocation's time is up; it finishes OVERRUN_MS after the 504.
    const release = gate();
    const slowLookup = defineToolModule({
      name: 'slow_lookup',
      description: 'Test tool: answers after a pause.',
      args: z.strictObject({ text: z.string() }),
      annotations: { destructiveHint: false, openWorldHint: false },
      access: {},
      async execute(args) {
        await release.opened;
        return { receipt: { text: args.text }, replayed: false };
      },
    });
    const logLevel = process.env.POWERTOOLS_LOG_LEVEL;
    process.env.POWERTOOLS_LOG_LEVEL = 'INFO'; // the suite's default is SILENT: this test reads the call's line
    const api = await startTestApi({ tools: [...TOOLS, slowLookup], timeoutMs: TIMEOUT_MS });
    process.env.POWERTOOLS_LOG_LEVEL = logLevel;
    const logged: Array<Record<string, unknown>> = [];
    function capture(chunk: unknown): boolean {
      for (const line of String(chunk).split('\n').filter(Boolean)) {
        try {
          logged.push(JSON.parse(line));
        } catch {
          // not a log line
        }
      }
      return true;
    }
    const writes = [jest.spyOn(process.stdout, 'write'), jest.spyOn(process.stderr, 'write')];
    for (const write of writes) write.mockImplementation(capture);

    // Act
    const reply = await api.post('/tools/slow_lookup', await api.token(newTenant()), {
      idempotency_key: 'k1',
      text: 'hi',
    });
    setTimeout(release.open, OVERRUN_MS);
    const callLine = () => logged.find((line) => line.message === 'tool call' && line.tool === 'slow_lookup');
    for (let waited = 0; waited < 5_000 && !callLine(); waited += 50) {
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    for (const write of writes) write.mockRestore();
    await api.close();

    // Assess: the caller got a 504 `timeout` at the deadline; the line says the same, at the same time.
    expect(reply.status).toBe(504);
    expect(reply.body).toMatchObject({ ok: false, error: { code: 'timeout' } });
    expect(callLine()).toMatchObject({ outcome: 'timeout', transport: 'rest' });
    const latency = callLine()?.latency as number;
    expect(latency).toBeLessThanOrEqual(TIMEOUT_MS);
    expect(latency).toBeGreaterThan(TIMEOUT_MS - 500);
  }, 15_000);
});
