// Review 4 (h-review4): failing tests for the wording of a handed-off call — not fixed.
import { TOOLS } from '../../app/tools';
import type { AnyToolModule } from '../../lib/tools/tool-module';
import { startTestApi, type TestApi } from '../helpers/api';
import { postMcp } from '../helpers/raw-mcp';
import { newTenant } from '../helpers/world';

/** The example's send_email under another name, declared long-running: a task-taking client's call is handed off. */
const laterEmail = ((module: AnyToolModule): AnyToolModule => ({
  ...module,
  name: 'send_email_later',
  longRunning: true,
  bind(services: unknown) {
    return { ...module.bind(services), name: 'send_email_later', longRunning: true };
  },
}))(TOOLS.find((tool) => tool.name === 'send_email') as AnyToolModule);

let api: TestApi;
beforeAll(async () => {
  api = await startTestApi({ tools: [...TOOLS, laterEmail] });
});
afterAll(() => api.close());

describe('review 4: a call handed off unrun, 2025-11-25 (task-augmented tools/call)', () => {
  it('the CreateTaskResult’s model-immediate-response says it is "Still running" — it is queued and has not started (W1 fixed the task’s statusMessage, not this)', async () => {
    const token = await api.token(newTenant('r4w'));
    const key = `r4w-${Date.now()}`;
    const email = { idempotency_key: key, to: 'a@example.com', subject: 'long', body: `b ${key}` };

    const created = (
      await postMcp(api.url, token, {
        jsonrpc: '2.0',
        id: 1,
        method: 'tools/call',
        params: { name: 'send_email_later', arguments: email, task: {} },
      })
    ).body;

    expect(created.result.task).toMatchObject({ status: 'working', statusMessage: expect.stringMatching(/queued/) });
    expect(created.result._meta['io.modelcontextprotocol/model-immediate-response']).not.toMatch(/Still running/);
  });
});
