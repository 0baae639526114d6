/**
 * Review 25 (helper) of de7f78a..7604d91: `maxAttempts` moved from CompleterOptions to ToolRuntimeOptions;
 * `get_operation`'s `retries_exhausted` became `gives_up`. Each test fails on 7604d91.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import * as z from 'zod/mini';
import { callsInFlight } from '../../lib/admin/calls-in-flight';
import { Completer, type CompleterOptions } from '../../lib/idempotency/completer';
import { DEFAULT_RECORD_ATTRIBUTES } from '../../lib/idempotency/protocol/record';
import type { ToolRuntime } from '../../lib/idempotency/runtime';
import { operationAnswer } from '../../lib/reads/answers';
import { callRecords } from '../helpers/call-records';
import { ownIdempotencyTable } from '../helpers/own-table';
import { createProtocolWorld, deadline, type ProtocolWorld } from '../helpers/protocol-world';
import { noteTool } from '../helpers/tools';

ownIdempotencyTable('api-review25');
let world: ProtocolWorld;
let runtime: ToolRuntime;
beforeAll(() => {
  world = createProtocolWorld();
  runtime = world.idempotencyRuntime();
});
afterAll(() => world.destroy());
afterEach(() => jest.restoreAllMocks());

const DOCS = join(__dirname, '..', '..', 'docs');

describe('review25 F4: the public docs still name the removed `retries_exhausted` field of get_operation (now `gives_up`)', () => {
  it('review25 F4: docs/api.md and docs/guarantees.md name only fields the abandoned answer has', () => {
    // The abandoned answer carries gives_up; retries_exhausted is no field of it (a strict object refuses it).
    const answer = { ok: true, status: 'abandoned', key: 'k', retry_after_ms: 1_000, hint: 'h' };
    const next = { action: 'call_again', after_ms: 1_000, message: 'm' };
    expect(z.safeParse(operationAnswer, { ...answer, next, gives_up: 'attempts' }).success).toBe(true);
    expect(z.safeParse(operationAnswer, { ...answer, next, retries_exhausted: true }).success).toBe(false);
    const stale = ['api.md', 'guarantees.md'].filter((file) =>
      readFileSync(join(DOCS, file), 'utf8').includes('retries_exhausted'),
    );
    expect(stale).toEqual([]);
  });
});

describe('review25 F5: CompleterOptions.maxAttempts removed without a trace: a completer built with it (a JavaScript caller, an options object typed loosely) silently runs 8 attempts, and 0 — refused before — is accepted', () => {
  it('review25 F5: new Completer({ maxAttempts: 2 }) re-runs a call whose 3 attempts failed (it gave up before 2fb432d), or should refuse the option', async () => {
    const { tool, execute } = noteTool('send_note');
    const records = callRecords(world, runtime);
    const call = await records.abandonedCall();
    await records.setAttributes(call.recordKey, { attempt: 3, in_progress_expiration: Date.now() - 120_000 });
    let outcome: string;
    try {
      const completer = new Completer({
        client: world.client,
        runtime,
        tools: [tool],
        queue: { send: async () => undefined },
        tableName: world.idempotencyTable.tableName,
        attributes: DEFAULT_RECORD_ATTRIBUTES,
        maxAttempts: 2,
      } as CompleterOptions);
      outcome = await completer.onRecheck({ key: call.recordKey, claim: call.claim }, deadline());
    } catch (error) {
      outcome = `refused: ${(error as Error).message}`;
    }
    expect({ outcome, runs: execute.mock.calls.length }).toEqual({
      outcome: expect.stringMatching(/^(gave_up|refused: .*maxAttempts)/),
      runs: 0,
    });
  });
});

describe('review25 F6: maxAttempts is checked where the runtime is built, not where retrysafe calls reads it', () => {
  it('review25 F6: callsInFlight({ maxAttempts: 0 }) is refused as the runtime refuses it (else every abandoned call “gives up: attempts”)', async () => {
    const records = callRecords(world, runtime);
    const call = await records.abandonedCall();
    let answer: string;
    try {
      const report = await callsInFlight(world.client, world.idempotencyTable.tableName, call.caller.tenant, {
        maxAttempts: 0,
      });
      answer = `listed: gives up ${report.calls[0]?.givesUp}`;
    } catch (error) {
      answer = `refused: ${(error as Error).message}`;
    }
    expect(answer).toMatch(/^refused: .*maxAttempts/);
  });
});
