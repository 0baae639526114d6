import { Logger } from '@aws-lambda-powertools/logger';
import { InvalidArgsError } from '../../lib/idempotency/errors';
import { createToolRuntime } from '../../lib/lambda/runtime';
import { gate, noteTool } from '../helpers/tools';
import { createWorld, deadline, identity, type World } from '../helpers/world';

let world: World;
beforeAll(() => {
  world = createWorld();
});
afterAll(() => world.destroy());

/** The embedded-metric-format lines Powertools Metrics prints, parsed, while `work` runs. */
async function emfLinesDuring(work: () => Promise<void>): Promise<Array<Record<string, unknown>>> {
  const lines: Array<Record<string, unknown>> = [];
  const write = jest.spyOn(process.stdout, 'write').mockImplementation((chunk) => {
    for (const line of String(chunk).split('\n').filter(Boolean)) {
      const parsed = JSON.parse(line) as Record<string, unknown>;
      if (parsed._aws) lines.push(parsed);
    }
    return true;
  });
  try {
    await work();
  } finally {
    write.mockRestore();
  }
  return lines;
}

describe('call metrics (CloudWatch embedded metric format)', () => {
  const disabled = process.env.POWERTOOLS_METRICS_DISABLED;
  beforeAll(() => {
    delete process.env.POWERTOOLS_METRICS_DISABLED;
  });
  afterAll(() => {
    process.env.POWERTOOLS_METRICS_DISABLED = disabled;
  });

  it('counts a scripted run of calls by tool and outcome, replays split by what answered them, never the tenant', async () => {
    const logger = new Logger({ serviceName: 'retrysafe-test', logLevel: 'INFO' });
    const runtime = createToolRuntime(
      { client: world.client, logger },
      { ...process.env, POWERTOOLS_SERVICE_NAME: 'retrysafe-test' },
    );
    const caller = identity();
    const invoice = await world.seedInvoice(caller.tenant);
    const refund = { invoice_id: invoice.invoice_id, amount: invoice.amount };
    const email = { to: 'a@example.com', subject: 's', body: 'b' };
    const hold = gate();
    const started = gate();
    const held = noteTool('held_note', async (args) => {
      started.open();
      await hold.opened;
      return { receipt: { text: args.text }, replayed: false };
    });
    const failing = noteTool('failing_note', async () => {
      throw new InvalidArgsError('text: not today');
    });

    const lines = await emfLinesDuring(async () => {
      await runtime.invoke(world.refund, caller, { idempotency_key: 'r1', ...refund }, deadline()); // executed
      await runtime.invoke(world.refund, caller, { idempotency_key: 'r1', ...refund }, deadline()); // replay: key
      await runtime.invoke(world.refund, caller, { idempotency_key: 'r2', ...refund }, deadline()); // replay: natural
      await runtime.invoke(world.refund, caller, { idempotency_key: 'r1', ...refund, amount: 1 }, deadline()); // conflict
      await runtime.invoke(world.refund, caller, { idempotency_key: 'r3', invoice_id: 'nope', amount: 1 }, deadline());
      await runtime.invoke(world.tools.send_email!, caller, { idempotency_key: 'e1', ...email }, deadline());
      await runtime.invoke(world.tools.send_email!, caller, { idempotency_key: 'e2', ...email }, deadline()); // window
      await runtime.invoke(failing.tool, caller, { idempotency_key: 'f1', text: 'x' }, deadline()); // invalid_args
      const running = runtime.invoke(held.tool, caller, { idempotency_key: 'h1', text: 'x' }, deadline());
      await started.opened;
      await runtime.invoke(held.tool, caller, { idempotency_key: 'h1', text: 'x' }, deadline()); // pending
      hold.open();
      await running; // executed
    });

    const counted = lines.map((line) => [line.tool, line.outcome, line.calls]);
    expect(counted).toEqual([
      ['refund', 'executed', 1],
      ['refund', 'replayed_client_key', 1],
      ['refund', 'replayed_natural_key', 1],
      ['refund', 'conflict', 1],
      ['refund', 'not_found', 1],
      ['send_email', 'executed', 1],
      ['send_email', 'replayed_dedupe_window', 1],
      ['failing_note', 'invalid_args', 1],
      ['held_note', 'pending', 1],
      ['held_note', 'executed', 1],
    ]);
    for (const line of lines) {
      expect(line).toMatchObject({
        service: 'retrysafe-test',
        latency: expect.any(Number),
        _aws: {
          CloudWatchMetrics: [
            {
              Namespace: 'retrysafe',
              Dimensions: [expect.arrayContaining(['service', 'tool', 'outcome'])],
              Metrics: expect.arrayContaining([
                { Name: 'calls', Unit: 'Count' },
                { Name: 'latency', Unit: 'Milliseconds' },
              ]),
            },
          ],
        },
      });
      // The tenant is in the call's log line, never a metric's dimension (its cardinality has no bound).
      expect(line).toMatchObject({ message: 'tool call', tenant: caller.tenant });
      expect(JSON.stringify((line._aws as { CloudWatchMetrics: unknown }).CloudWatchMetrics)).not.toContain('tenant');
    }
  });

  it("writes one line per call and nothing else: the EMF `service` dimension is the Logger's own field", async () => {
    const logger = new Logger({ serviceName: 'retrysafe-test', logLevel: 'INFO' });
    const runtime = createToolRuntime(
      { client: world.client, logger },
      { ...process.env, POWERTOOLS_SERVICE_NAME: 'retrysafe-test' },
    );
    const { tool } = noteTool('one_line_note');
    const written: string[] = [];
    const capture = (chunk: unknown) => {
      written.push(...String(chunk).split('\n').filter(Boolean));
      return true;
    };
    const stdout = jest.spyOn(process.stdout, 'write').mockImplementation(capture);
    const stderr = jest.spyOn(process.stderr, 'write').mockImplementation(capture);
    try {
      await runtime.invoke(tool, identity(), { idempotency_key: 'one', text: 'x' }, deadline());
    } finally {
      stdout.mockRestore();
      stderr.mockRestore();
    }

    expect(written.map((line) => JSON.parse(line).level)).toEqual(['INFO']);
    expect(JSON.parse(written[0]!)).toMatchObject({ message: 'tool call', service: 'retrysafe-test', calls: 1 });
  });

  it('still writes the metrics, alone, when the log level hides the call line (alarms read them)', async () => {
    const logger = new Logger({ serviceName: 'retrysafe-test', logLevel: 'WARN' });
    const runtime = createToolRuntime({ client: world.client, logger }, process.env);
    const { tool } = noteTool('quiet_note');

    const lines = await emfLinesDuring(async () => {
      await runtime.invoke(tool, identity(), { idempotency_key: 'q1', text: 'x' }, deadline());
    });

    expect(lines).toEqual([expect.objectContaining({ tool: 'quiet_note', outcome: 'executed', calls: 1 })]);
    expect(lines[0]).not.toHaveProperty('message');
  });
});
