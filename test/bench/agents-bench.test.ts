import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';

/**
 * `npm run bench:agents` at a small size, on the test run's DynamoDB Local (in a namespace of its own):
 * retrysafe holds its promise in every row but the TTL's, and the harness does count doubles — every
 * fault doubles effects when nothing guards them, so a harness that counted nothing would fail here.
 * The bench runs as its own process, as `npm run bench:agents` does (its agent frameworks are ES modules).
 */
const root = join(__dirname, '..', '..');
const FAULTS = [
  'lost_response',
  'gateway_timeout',
  'worker_killed',
  'concurrent_duplicates',
  'store_throttling',
  'retry_after_ttl',
];

interface Row {
  readonly approach: string;
  readonly runtime: string;
  readonly fault: string;
  readonly intents: number;
  readonly doubled: number;
  readonly half_done: number;
}

let dir: string;
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'bench-agents-'));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('bench:agents, 12 intents per row (every tool × behaviour once), none and retrysafe', () => {
  it('counts doubles for no idempotency under every fault, and none or half done for retrysafe outside the TTL row', async () => {
    // Prepare
    const json = join(dir, 'rows.json');

    // Act
    const { stdout } = await promisify(execFile)(
      process.execPath,
      [
        join(root, 'node_modules', 'tsx', 'dist', 'cli.mjs'),
        join(root, 'bench', 'agents', 'main.ts'),
        '--intents',
        '12',
        '--seed',
        '7',
        '--approaches',
        'none,retrysafe',
        '--json',
        json,
      ],
      { cwd: root, env: process.env, maxBuffer: 16 * 1024 * 1024 },
    );
    const rows = JSON.parse(readFileSync(json, 'utf8')) as Row[];

    // Assess
    expect(stdout).toContain('| approach | runtime | fault |');
    expect(rows).toHaveLength(2 * 2 * FAULTS.length);
    for (const row of rows) expect(row.intents).toBe(12);
    const none = rows.filter((row) => row.approach === 'none');
    expect(none.map((row) => row.fault).sort()).toEqual([...FAULTS, ...FAULTS].sort());
    for (const row of none) expect(row.doubled).toBeGreaterThan(0);
    const retrysafe = rows.filter((row) => row.approach === 'retrysafe' && row.fault !== 'retry_after_ttl');
    expect(retrysafe).toHaveLength(2 * (FAULTS.length - 1));
    for (const { runtime, fault, doubled, half_done } of retrysafe) {
      expect({ runtime, fault, doubled, half_done }).toEqual({ runtime, fault, doubled: 0, half_done: 0 });
    }
  }, 240_000);
});
