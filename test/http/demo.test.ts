import { execFile } from 'node:child_process';
import { promisify } from 'node:util';

const run = promisify(execFile);

describe('npm run demo', () => {
  it('walks the agent loop and shows one ledger movement per invoice', async () => {
    // The demo starts its own local API; it shares this run's DynamoDB Local through the environment.
    const { stdout } = await run('npx', ['tsx', 'bin/demo.ts'], { env: process.env, timeout: 60_000 });

    expect(stdout).toMatch(/2\. refund it \(key refund-1\)\s+200 executed/);
    expect(stdout).toMatch(/3\. response lost: retry with the same key\s+200 replayed/);
    expect(stdout).toMatch(/4\. model forgot the key: retry with a fresh key\s+200 replayed/);
    expect(stdout).toMatch(/5\. same key, other amount\s+422 conflict/);
    expect(stdout).toMatch(/7\. an invoice that does not exist\s+404 not_found/);
    expect(stdout).toMatch(/8\. ten concurrent duplicates of one refund\s+1 executed/);
    expect(stdout).toMatch(/9\. the pending ones poll their key\s+200 completed/);
    expect(stdout.match(/: 1 movement\(s\)/g)).toHaveLength(2);
  }, 90_000);
});
