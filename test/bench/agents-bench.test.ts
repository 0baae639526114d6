import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';

/**
 * `npm run bench:agents -- --quick`, the headline at its CI size (issue 36: every approach — none, Powertools
 * on a client key, Powertools on the arguments' hash, retrysafe — × both agent runtimes × every fault, 12
 * intents a row), on the test run's DynamoDB Local (in a namespace of its own): retrysafe holds its promise in
 * every row but the TTL's (the bench exits 1 otherwise), and the harness does count doubles — every fault
 * doubles effects when nothing guards them, so a harness that counted nothing would fail here. CI runs it
 * here, in the README's test command, not as a step of its own. The bench runs as its own process, as
 * `npm run bench:agents` does (its agent frameworks are ES modules).
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

describe('bench:agents --quick: 12 intents per row (every tool × behaviour once), every approach', () => {
  it('counts doubles for no idempotency under every fault, and none or half done for retrysafe outside the TTL row', async () => {
    // Prepare
    const json = join(dir, 'rows.json');

    // Act
    const { stdout } = await promisify(execFile)(
      process.execPath,
      [
        join(root, 'node_modules', 'tsx', 'dist', 'cli.mjs'),
        join(root, 'bench', 'agents', 'main.ts'),
        '--quick',
        '--json',
        json,
      ],
      { cwd: root, env: process.env, maxBuffer: 16 * 1024 * 1024 },
    );
    const rows = JSON.parse(readFileSync(json, 'utf8')) as Row[];

    // Assess
    expect(stdout).toContain('| approach | runtime | fault |');
    expect(new Set(rows.map((row) => row.approach))).toEqual(
      new Set(['none', 'powertools-client-key', 'powertools-args-hash', 'retrysafe']),
    );
    expect(rows).toHaveLength(4 * 2 * FAULTS.length);
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
