import { execFile } from 'node:child_process';
import { promisify } from 'node:util';

const run = promisify(execFile);

describe('npm run demo', () => {
  it('walks the agent loop and shows one ledger movement per invoice', async () => {
    // As a user runs it: the demo starts its own DynamoDB Local and local API, and stops both.
    const { DYNAMODB_ENDPOINT: _shared, ...env } = process.env;
    const { stdout } = await run('npx', ['tsx', 'bin/demo.ts'], { env, timeout: 80_000 });

    expect(stdout).toMatch(/2\. refund it \(key refund-1\)\s+200 executed/);
    expect(stdout).toMatch(/3\. response lost: retry with the same key\s+200 replayed/);
    expect(stdout).toMatch(/4\. model forgot the key: retry with a fresh key\s+200 replayed/);
    expect(stdout).toMatch(/5\. same key, other amount\s+422 conflict/);
    expect(stdout).toMatch(/6\. fresh key, wrong amount\s+400 invalid_args/);
    expect(stdout).toMatch(/7\. an invoice that does not exist\s+404 not_found/);
    expect(stdout).toMatch(/8\. ten concurrent duplicates of one refund\s+1 executed/);
    expect(stdout).toMatch(/9\. the pending ones poll their key\s+200 completed/);
    expect(stdout.match(/: 1 movement\(s\)/g)).toHaveLength(2);
    // The same loop over MCP with the official client: a model that forgets its key sends one email.
    expect(stdout).toMatch(/over MCP \(8 tools/);
    expect(stdout).toMatch(/M3\. answer lost: retry with the same key\s+replayed/);
    expect(stdout).toMatch(/M4\. model forgot the key: a fresh one\s+replayed/);
    expect(stdout).toMatch(/M6\. model forgot the key: send_email, fresh key\s+replayed/);
    expect(stdout).toMatch(/M7\. the same email, key in the request \(extension\)\s+replayed/);
    expect(stdout).toMatch(/outbox for cy@example\.com: 1 message\(s\) msg_\w+ delivered/);
  }, 90_000);
});
