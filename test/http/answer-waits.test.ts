// Rule 8 (docs/state-machine.md): every call ends, in a time its answers state.
/**
 * Every answer's wait is when its call can next change, on the paths the review of issue 35's fixes
 * found (helper-22), each first as a failing test: a call Powertools' handler left in flight (its task's
 * poll, a resend's promise), a fresh key behind a dedupe window's parked holder, a provider's wait longer
 * than the record's TTL; and by the review of the hand-off (helper-23): a call Powertools' handler holds with
 * no lock (promised one effect), a call handed off unrun (described as crashed).
 */
import { GetItemCommand, UpdateItemCommand } from '@aws-sdk/client-dynamodb';
import { unmarshall } from '@aws-sdk/util-dynamodb';
import { TOOLS } from '../../app/tools';
import { recordKeyOf } from '../../lib/idempotency/derivation';
import { InFlightError } from '../../lib/idempotency/errors';
import { MIN_TTL_SECONDS } from '../../lib/idempotency/tool';
import { taskIdOf } from '../../lib/mcp/tasks';
import { GIVES_UP_HINTS } from '../../lib/reads/operation';
import { idempotencyTableName } from '../../lib/store/tables';
import { startTestApi, type TestApi } from '../helpers/api';
import { advanceClock } from '../helpers/clock';
import { longRunningEmail } from '../helpers/long-running-email';
import { ownIdempotencyTable } from '../helpers/own-table';
import { putPowertoolsInFlight } from '../helpers/powertools-records';
import { modernRequest, postMcp } from '../helpers/raw-mcp';
import { noteTool } from '../helpers/tools';
import { deadline, identity, newTenant } from '../helpers/world';

// An idempotency table of its own: it writes records with no tenant (Powertools' handler's), which every
// other suite's tenant erase would take as its own (rule 6).
ownIdempotencyTable('answer-waits');
/** The example's send_email under another name, declared long-running: a task-taking client's call is handed off. */
const laterEmail = longRunningEmail('send_email_later');

let api: TestApi;
beforeAll(async () => {
  api = await startTestApi({ tools: [...TOOLS, laterEmail] });
});
afterAll(() => api.close());

/** One 2026-07-28 request, the tasks extension declared. */
function modern(token: string, method: string, params: Record<string, unknown>) {
  return modernRequest(api.url, token, method, params, { client: 'review' });
}

const putPowertoolsRecord = (
  tenant: string,
  key: string,
  args: Record<string, string>,
  ttlS: number,
  lock: 'ended' | 'none' = 'ended',
) => putPowertoolsInFlight(api.services.client, { tenant, key, args, ttlS, lock });
const putStalledPowertoolsRecord = (tenant: string, key: string, args: Record<string, string>, ttlS: number) =>
  putPowertoolsRecord(tenant, key, args, ttlS, 'ended');

describe('a task of a call Powertools’ handler left in flight polls at its TTL, when it can next change (review F2; taskOf, stalledChangesAtMs)', () => {
  it('tasks/get’s pollIntervalMs is the wait the CreateTaskResult and get_operation’s retry_after_ms give (stalledChangesAtMs: the TTL)', async () => {
    const tenant = newTenant();
    const token = await api.token(tenant);
    const key = `pt-${Date.now()}`;
    const args = { to: 'a@example.com', subject: 's', body: 'b' };
    const ttlS = 3_600;
    await putStalledPowertoolsRecord(tenant, key, args, ttlS);
    const created = await modern(token, 'tools/call', {
      name: 'send_email',
      arguments: { idempotency_key: key, ...args },
    });
    const taskId = created.result.taskId as string;

    const poll = await modern(token, 'tools/call', {
      name: 'get_operation',
      arguments: { tool: 'send_email', idempotency_key: key },
    });
    const task = await modern(token, 'tasks/get', { taskId });

    const pollWait = poll.result.structuredContent.retry_after_ms as number;
    // The task as created, and the poll, say: nothing changes before the TTL.
    expect(taskId).toBe(taskIdOf('send_email', key, 'x@powertools'));
    expect(created.result.pollIntervalMs).toBeGreaterThan((ttlS - 60) * 1000);
    expect(pollWait).toBeGreaterThan((ttlS - 60) * 1000);
    expect(task.result).toMatchObject({ status: 'working' });
    // Rule 8: no answer hints a wait shorter than the time to the next change. The task says 60 s.
    expect(task.result.pollIntervalMs).toBeGreaterThan((ttlS - 60) * 1000);
  });
});

describe('a resend of a call Powertools’ handler left in flight is promised no single effect: after its wait a resend runs it anew (review F3; runs_anew, nextAfterWrite)', () => {
  it('POST /tools/send_email: the 202 pending answer’s next promises no single effect past the TTL, as the poll’s does', async () => {
    const tenant = newTenant();
    const token = await api.token(tenant);
    const key = `pt3-${Date.now()}`;
    const args = { to: 'a@example.com', subject: 's', body: 'b' };
    const ttlS = 3_600;
    await putStalledPowertoolsRecord(tenant, key, args, ttlS);

    const resend = await api.post('/tools/send_email', token, { idempotency_key: key, ...args });
    const poll = await modern(token, 'tools/call', {
      name: 'get_operation',
      arguments: { tool: 'send_email', idempotency_key: key },
    });

    expect(resend.status).toBe(202);
    expect(resend.body).toMatchObject({ ok: false, status: 'pending' });
    // It says: come back at the TTL (past it, a resend claims anew and runs the tool again)…
    expect(resend.next?.after_ms).toBeGreaterThan((ttlS - 60) * 1000);
    // …and the poll of the same call says so: "calling again runs it anew and can act twice".
    expect(JSON.stringify(poll.result.structuredContent)).toMatch(/can act twice/);
    // The write's own answer must not promise the opposite.
    expect(resend.next?.message).not.toMatch(/will not run twice|cannot act twice/);
  });
});

describe('a fresh key waiting on a dedupe window’s parked holder waits all of the holder’s lock (review F5; claimIntent running.parked)', () => {
  it('the waiter’s pending retry_after_ms is the holder’s park, as the holder’s own answer and its poll say', async () => {
    const PROVIDER_WAIT_MS = 5_000;
    const { tool } = noteTool(
      `dedupe_${Date.now()}`,
      async () => {
        throw new InFlightError('the provider is still processing this key', PROVIDER_WAIT_MS);
      },
      { dedupeWindowSeconds: 600 },
    );
    const caller = identity();

    const holder = await api.runtime.invoke(tool, caller, { idempotency_key: 'k-holder', text: 'same' }, deadline());
    const waiter = await api.runtime.invoke(tool, caller, { idempotency_key: 'k-waiter', text: 'same' }, deadline());

    // The holder is parked: nobody runs it (nor the intent) for 5 s.
    expect(holder).toMatchObject({ ok: false, status: 'pending' });
    expect((holder as { retry_after_ms: number }).retry_after_ms).toBeGreaterThan(PROVIDER_WAIT_MS - 1_000);
    // The waiter can learn nothing before the holder's park ends — rule 8: its hint is not shorter.
    expect(waiter).toMatchObject({ ok: false, status: 'pending' });
    expect((waiter as { retry_after_ms: number }).retry_after_ms).toBeGreaterThan(PROVIDER_WAIT_MS - 1_500);
  });
});

describe('a provider’s wait parks no lock past the record’s TTL, and no wait points past it (review F8; settle, latestLockEndMs)', () => {
  it('a provider wait of 2 h on a tool whose TTL is MIN_TTL_SECONDS: the lock ends 10 s before the TTL (rule 2), and no hint points past the TTL', async () => {
    const name = `long_park_${Date.now()}`;
    const { tool } = noteTool(
      name,
      async () => {
        throw new InFlightError('the provider is still processing this key', 2 * 3_600_000);
      },
      { ttlSeconds: MIN_TTL_SECONDS },
    );
    const caller = identity();

    const answer = await api.runtime.invoke(tool, caller, { idempotency_key: 'k-long', text: 'x' }, deadline());
    const poll = await api.runtime.lookup(name, caller, 'k-long');
    const { Item } = await api.services.client.send(
      new GetItemCommand({
        TableName: idempotencyTableName(),
        Key: { id: { S: recordKeyOf(name, [caller.tenant, caller.user, 'k-long']) } },
        ConsistentRead: true,
      }),
    );
    const record = unmarshall(Item ?? {});
    const untilTtlMs = (record.expiration as number) * 1000 - Date.now();

    expect(answer).toMatchObject({ ok: false, status: 'pending' });
    // Rule 2: every lock ends 10 s before its record's TTL.
    expect(record.in_progress_expiration as number).toBeLessThanOrEqual((record.expiration as number) * 1000 - 10_000);
    // Rule 4: a pending call is pollable — the answer's wait must not outlast the record it points at.
    expect((answer as { retry_after_ms: number }).retry_after_ms).toBeLessThanOrEqual(untilTtlMs);
    expect((poll as { retryAfterMs?: number }).retryAfterMs ?? 0).toBeLessThanOrEqual(untilTtlMs);
  });

  // Review 3, H4: NaN reached the park's condition, and the caller was told "internal: internal error".
  it.each([
    ['NaN', Number.NaN],
    ['a negative wait', -5_000],
  ])(
    'a provider wait of %s is no wait: pending, ask again at once, the call parked with its lock ended (a resend takes it over)',
    async (_what, waitMs) => {
      const name = `odd_wait_${Date.now()}`;
      const { tool } = noteTool(name, async () => {
        throw new InFlightError('the provider still runs this key', waitMs);
      });
      const caller = identity();

      const answer = await api.runtime.invoke(tool, caller, { idempotency_key: 'k-odd', text: 'x' }, deadline());
      const poll = await api.runtime.lookup(name, caller, 'k-odd');

      expect(answer).toMatchObject({ ok: false, status: 'pending' });
      expect(Number.isFinite((answer as { retry_after_ms: number }).retry_after_ms)).toBe(true);
      expect(poll).toMatchObject({ status: 'abandoned' });
    },
  );
});

describe('a call Powertools’ handler holds with no lock is promised no single effect either (review 3, P1; answerOfRecord, lookup, taskOf)', () => {
  it('a resend, get_operation and the task say runs anew past its TTL — and past it a resend does run it', async () => {
    const tenant = newTenant();
    const token = await api.token(tenant);
    const key = `ptl-${Date.now()}`;
    const args = { to: 'a@example.com', subject: 's', body: 'b' };
    await putPowertoolsRecord(tenant, key, args, 120, 'none');

    const resend = await api.post('/tools/send_email', token, { idempotency_key: key, ...args });
    const poll = await modern(token, 'tools/call', {
      name: 'get_operation',
      arguments: { tool: 'send_email', idempotency_key: key },
    });
    const task = await modern(token, 'tasks/get', {
      taskId: taskIdOf('send_email', key, `${recordKeyOf('send_email', [tenant, 'ada', key])}@powertools`),
    });
    // The record's TTL passes (its only change): the same resend now claims the key anew and runs the tool.
    advanceClock(125_000);
    const afterTtl = await api.post('/tools/send_email', token, { idempotency_key: key, ...args });
    jest.restoreAllMocks();

    expect(resend.status).toBe(202);
    expect(afterTtl.body).toMatchObject({ ok: true, idempotent: false });
    expect({
      runs_anew: (resend.body as { runs_anew?: boolean }).runs_anew,
      next: resend.next?.message,
      poll: poll.result.structuredContent,
      task: task.result?.statusMessage,
    }).toEqual({
      runs_anew: true,
      next: expect.stringMatching(/can act twice/),
      poll: expect.objectContaining({
        status: 'pending',
        runs_anew: true,
        hint: expect.stringMatching(/can act twice/),
      }),
      task: expect.stringMatching(/can act twice/),
    });
    expect(JSON.stringify([resend.body, poll.result, task.result])).not.toMatch(/will not run twice/);
  });
});

describe('a call handed off unrun is told queued, not crashed (review 3, W1; HANDED_OFF_HINT, CallTask.note)', () => {
  it('2026-07-28: its task and get_operation say it is queued and has not started — no “its worker died, or its attempt failed”', async () => {
    const token = await api.token(newTenant('w1'));
    const key = `w1-${Date.now()}`;
    const email = { idempotency_key: key, to: 'a@example.com', subject: 'long', body: `b ${key}` };

    const created = await modern(token, 'tools/call', { name: 'send_email_later', arguments: email });
    const poll = await modern(token, 'tools/call', {
      name: 'get_operation',
      arguments: { tool: 'send_email_later', idempotency_key: key },
    });

    expect(created.result).toMatchObject({ resultType: 'task', status: 'working' });
    expect(poll.result.structuredContent).toMatchObject({ status: 'abandoned', queued: true });
    expect({ task: created.result.statusMessage, poll: JSON.stringify(poll.result.structuredContent) }).toEqual({
      task: expect.stringMatching(/queued/),
      poll: expect.not.stringMatching(/worker died|attempt failed|stopped before it finished/),
    });
  });
});

describe('a call handed off unrun, 2025-11-25 (review 4, F5: the model’s immediate response)', () => {
  it('the CreateTaskResult tells the model it is queued, not "Still running"', async () => {
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
    expect(created.result._meta['io.modelcontextprotocol/model-immediate-response']).toMatch(
      /^Queued under idempotency_key/,
    );
  });
});

describe('a call whose attempts are used up is not promised a re-run (Liveness, rows "attempt > maxAttempts"; givesUpAtNextLook)', () => {
  it('2026-07-28: get_operation (through its outputSchema) and tasks/get say the server stops retrying it at its wait, and that a resend runs it', async () => {
    const tenant = newTenant('rx');
    const token = await api.token(tenant);
    const key = `rx-${Date.now()}`;
    const email = { idempotency_key: key, to: 'a@example.com', subject: 'long', body: `b ${key}` };
    const created = await modern(token, 'tools/call', { name: 'send_email_later', arguments: email });
    // Nine attempts ran or failed and one was queued: the completer's next look gives it up (MAX_ATTEMPTS 8).
    await api.services.client.send(
      new UpdateItemCommand({
        TableName: idempotencyTableName(),
        Key: { id: { S: recordKeyOf('send_email_later', [tenant, 'ada', key]) } },
        UpdateExpression: 'SET attempt = :attempt, queued_attempts = :queued',
        ExpressionAttributeValues: { ':attempt': { N: '10' }, ':queued': { N: '1' } },
        ConditionExpression: 'attribute_exists(id)',
      }),
    );

    const poll = await modern(token, 'tools/call', {
      name: 'get_operation',
      arguments: { tool: 'send_email_later', idempotency_key: key },
    });
    const task = await modern(token, 'tasks/get', { taskId: created.result.taskId });

    expect(poll.result.isError).toBeFalsy();
    expect(poll.result.structuredContent).toMatchObject({
      status: 'abandoned',
      gives_up: 'attempts',
      hint: GIVES_UP_HINTS.attempts,
      next: { action: 'call_again', message: expect.stringMatching(/stops retrying it in/) },
    });
    expect(poll.result.structuredContent).not.toHaveProperty('queued');
    expect(task.result).toMatchObject({ status: 'working', statusMessage: GIVES_UP_HINTS.attempts });
    expect(JSON.stringify([poll.result, task.result])).not.toMatch(/re-runs it/);
  });
});
