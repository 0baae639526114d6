import { answerToolCall } from '../../lib/client/agent';
import { GaveUpError } from '../../lib/client/errors';

/** A client whose every call gives up the way `RetrysafeClient` does, with the server's last hint or none. */
function givingUp(retryAfterMs?: number) {
  return {
    async call(): Promise<never> {
      throw new GaveUpError('refund', 'k1', 3, 30_000, 'pending', retryAfterMs === undefined ? {} : { retryAfterMs });
    },
  };
}

describe('an agent told gave_up (liveness: every answer says truthfully when to ask again)', () => {
  it('waits as long as the server last said the call can next change, when that is longer', async () => {
    const answer = await answerToolCall(givingUp(30_000), {
      tool: 'refund',
      input: { idempotency_key: 'k1' },
      toolCallId: 'c',
    });

    expect(answer).toMatchObject({ ok: false, key: 'k1', error: { code: 'gave_up' }, next: { after_ms: 30_000 } });
    expect(answer.next.message).toContain('After 30000 ms');
  });

  it('waits its own 5 s when the server said sooner, or nothing', async () => {
    const sooner = await answerToolCall(givingUp(1_000), {
      tool: 'refund',
      input: { idempotency_key: 'k1' },
      toolCallId: 'c',
    });
    const none = await answerToolCall(givingUp(), {
      tool: 'refund',
      input: { idempotency_key: 'k1' },
      toolCallId: 'c',
    });

    expect(sooner.next.after_ms).toBe(5_000);
    expect(none.next.after_ms).toBe(5_000);
  });
});
