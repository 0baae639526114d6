// Rule 6 (docs/state-machine.md): erase is final and keeps what is in flight.
/**
 * `retrysafe erase` as an operator's script runs it (lib/cli/bin.ts, the example's retrysafe.config.ts, on
 * DynamoDB Local): an erase that left something for later exits 3 and says what is left and when to run it
 * again; run again once the call settled, it finishes and exits 0 (rule 6 of docs/state-machine.md).
 */
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import { QueryCommand } from '@aws-sdk/client-dynamodb';
import { tableName } from '../../app/tables';
import { release } from '../../lib/idempotency/protocol/settle';
import { claimInFlight } from '../helpers/call-records';
import { ownIdempotencyTable } from '../helpers/own-table';
import { createWorld, deadline, identity, newTenant, type World } from '../helpers/world';

const run = promisify(execFile);
const ROOT = join(__dirname, '..', '..');
const NODE = [
  '--import',
  pathToFileURL(join(ROOT, 'node_modules', 'tsx', 'dist', 'loader.mjs')).href,
  join(ROOT, 'lib', 'cli', 'bin.ts'),
];

/** `retrysafe erase <args>` over the example's config: its exit code and what it printed. */
async function erase(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await run(
      process.execPath,
      [...NODE, 'erase', '--config', 'retrysafe.config.ts', ...args],
      {
        cwd: ROOT,
        env: process.env, // DynamoDB Local's endpoint and the tables' names, as the tests' store set them
        timeout: 60_000,
      },
    );
    return { code: 0, stdout, stderr };
  } catch (error) {
    const failed = error as { code: number; stdout: string; stderr: string };
    return { code: failed.code, stdout: failed.stdout, stderr: failed.stderr };
  }
}

// A table of its own: it erases a tenant and counts what it finds, and a tenant's erase takes every
// record with no tenant as its own (rule 6) — other suites write such records on the shared table.
ownIdempotencyTable('erase-command');
let world: World;
beforeAll(() => {
  world = createWorld();
});
afterAll(() => world.destroy());

async function ticketsOf(tenant: string): Promise<number> {
  const { Count } = await world.client.send(
    new QueryCommand({
      TableName: tableName('tickets'),
      KeyConditionExpression: 'tenant = :tenant',
      ExpressionAttributeValues: { ':tenant': { S: tenant } },
      ConsistentRead: true,
      Select: 'COUNT',
    }),
  );
  return Count ?? 0;
}

describe('retrysafe erase', () => {
  it('exits 3 when it left a table for later, printing what is left and when to run it again; once the call settled, a rerun finishes it and exits 0', async () => {
    // prepare: an invoice and a ticket, and a close_ticket call in flight (its access: tickets only)
    const tenant = newTenant('cli-erase');
    await world.seedInvoice(tenant);
    await world.runtime.invoke(
      world.tools.create_ticket!,
      identity(tenant, 'ada'),
      { idempotency_key: 't1', title: 'broken' },
      deadline(),
    );
    const lockEndsMs = Date.now() + 5 * 60_000;
    const claimed = { claim: await claimInFlight(world, tenant, 'close_ticket', lockEndsMs) };
    const retryAfter = new Date(lockEndsMs).toISOString();

    // act
    const partial = await erase(['--tenant', tenant, '--include-domain']);
    const asJson = await erase(['--tenant', tenant, '--include-domain', '--json']);
    expect(await release(world.idempotencyTable, claimed.claim)).toBe('released'); // the call settles
    const rerun = await erase(['--tenant', tenant, '--include-domain']);

    // assess
    expect(partial.code).toBe(3);
    expect(partial.stdout).toMatch(/invoices\s+found 1, deleted 1/);
    expect(partial.stdout).toContain('tickets      kept: deferred: 1 call(s) in flight');
    expect(partial.stdout).toContain('left for later (calls in flight: 1 live):');
    expect(partial.stdout).toMatch(/idempotency\s+1 item\(s\) kept, 1 call\(s\) in flight hold them/);
    expect(partial.stdout).toMatch(/tickets\s+not erased: 1 call\(s\) in flight may still write to it/);
    expect(partial.stdout).toContain(`run again after ${retryAfter.slice(11, 19)} UTC (${retryAfter})`);
    expect(asJson.code).toBe(3);
    expect(JSON.parse(asJson.stdout)).toMatchObject({
      tenant,
      complete: false,
      deferred: [
        { table: 'idempotency', reason: 'items_kept', calls: 1, items: 1 },
        { table: 'tickets', reason: 'calls_in_flight', calls: 1 },
      ],
      retryAfter,
    });
    expect(rerun.code).toBe(0);
    expect(rerun.stdout).not.toContain('left for later');
    expect(rerun.stdout).not.toContain('run again');
    expect(await ticketsOf(tenant)).toBe(0);
  }, 120_000);

  it('says in its usage what exit code 3 means', async () => {
    const help = await erase(['--help']);

    expect(help.code).toBe(0);
    expect(help.stdout).toMatch(/Exit codes: 0 erased \(nothing left\), 3 something left for later/);
  }, 60_000);
});
