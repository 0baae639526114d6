// Rule 8 (docs/state-machine.md): every call ends, in a time its answers state.
import { main } from '../../lib/cli/main';
import { dueWords } from '../../lib/cli/operations';

/**
 * `retrysafe complete`'s flags (liveness: a run says when the next call is due, and `--until-settled` runs
 * until nothing is left, bounded): refused before any store is opened. What a run does is held by
 * test/integration/completer.test.ts (a run every minute from cron) and examples/own-tools (a real run).
 */
describe('retrysafe complete', () => {
  let errors: string[];
  beforeEach(() => {
    errors = [];
    jest.spyOn(console, 'error').mockImplementation((...parts: unknown[]) => void errors.push(parts.join(' ')));
  });
  afterEach(() => jest.restoreAllMocks());

  it.each([
    [['--max-wait', '5m'], '--max-wait: only with --until-settled'],
    [['--until-settled', '--max-wait', 'soon'], '--max-wait: "soon" is not a duration like 90s, 45m or 2h'],
    [['--until-settled', '--max-wait', '5d'], '--max-wait: "5d" is not a duration like 90s, 45m or 2h'],
  ])('refuses %j naming the flag, exit 2, nothing run', async (argv, message) => {
    const code = await main(['complete', ...argv], __dirname, {});

    expect(code).toBe(2);
    expect(errors[0]).toContain(message);
  });

  it('says when the next call is due as an operator reads it: the UTC time and the wait', () => {
    const now = Date.parse('2026-12-05T21:40:40.200Z');

    expect(dueWords(Date.parse('2026-12-05T21:45:10Z'), now)).toBe('21:45:10 UTC (in 4 min 30 s)');
    expect(dueWords(Date.parse('2026-12-05T21:41:00Z'), now)).toBe('21:41:00 UTC (in 20 s)');
    expect(dueWords(Date.parse('2026-12-05T21:42:40.200Z'), now)).toBe('21:42:40 UTC (in 2 min)');
  });
});
