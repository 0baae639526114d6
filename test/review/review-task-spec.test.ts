/**
 * A review's findings (a fresh eye, after MCP tasks landed), each a test that failed then: the task wire
 * against MCP 2025-11-25 (basic/utilities/tasks.mdx) and the task view.
 */

import type { CallRecord } from '../../lib/idempotency/protocol/record';
import { taskOf } from '../../lib/idempotency/task';
import { createWorld, identity, type World } from '../helpers/world';
import { mcpOf } from './review-mcp';

let world: World;
let rpc: ReturnType<typeof mcpOf>;
beforeAll(() => {
  world = createWorld();
  rpc = mcpOf(world);
});
afterAll(() => world.destroy());

it('"Tasks MUST begin in the working status when created" (Task Status Lifecycle, 1)', async () => {
  const created = await rpc(identity(), 'tools/call', {
    name: 'create_invoice',
    arguments: { idempotency_key: 'k', customer: 'cus_ada', amount: 4200 },
    task: {},
  });
  expect(created.result.task.status).toBe('working');
});

it('a completed task’s lastUpdatedAt does not move when the tool’s TTL is changed by a redeploy', () => {
  const storedAtMs = Date.parse('2026-01-01T12:00:00Z');
  const record: CallRecord = {
    recordKey: 't#h',
    callId: 't#h@i',
    status: 'COMPLETED',
    claimId: 'c',
    lockEndsMs: storedAtMs,
    expiresAtS: storedAtMs / 1000 + 86_400, // stored with the 24 h default
    validation: 'v',
    tenant: 'acme',
    tool: 't',
    call: undefined,
    downstreamKey: undefined,
    attempt: 1,
    outcome: { receipt: '{}', replayed: false },
    stalledClaimId: undefined,
    createdAtMs: storedAtMs - 1_000,
    completedAtMs: storedAtMs, // the store writes it with the outcome
  };
  const now = storedAtMs + 60_000;
  const before = taskOf(record, { nowMs: now, clientKey: 'k', ttlSeconds: 86_400 });
  const after = taskOf(record, { nowMs: now, clientKey: 'k', ttlSeconds: 3_600 }); // the tool's TTL now 1 h
  expect(new Date(after!.lastUpdatedAtMs).toISOString()).toBe(new Date(before!.lastUpdatedAtMs).toISOString());
  expect(after!.lastUpdatedAtMs).toBeLessThanOrEqual(now);
});

it('an abandoned call the completer will not look at for minutes is not worth polling every second', () => {
  // attempt 4 parked (abandoned at once): the completer's recheck of it is due after its backoff
  // (onStream: lock end + backoffSeconds(attempt - 1) = 120 s), and nobody else runs it
  const nowMs = Date.now();
  const record: CallRecord = {
    recordKey: 't#h',
    callId: 't#h@i',
    status: 'INPROGRESS',
    claimId: 'c4',
    lockEndsMs: nowMs - 1,
    expiresAtS: nowMs / 1000 + 86_000,
    validation: 'v',
    tenant: 'acme',
    tool: 't',
    call: undefined,
    downstreamKey: undefined,
    attempt: 4,
    outcome: undefined,
    stalledClaimId: undefined,
    createdAtMs: nowMs - 600_000,
    completedAtMs: undefined,
  };
  const task = taskOf(record, { nowMs, clientKey: 'k', ttlSeconds: 86_400 });
  expect(task).toMatchObject({ status: 'working', state: 'abandoned' });
  expect(task!.status === 'working' && task!.pollIntervalMs).toBeGreaterThanOrEqual(60_000);
});
