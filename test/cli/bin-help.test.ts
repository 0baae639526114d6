/**
 * This repository's own commands (npm run explore, chaos, bench, demo, openapi, check:package): `--help`
 * prints the usage and exits 0; an unknown flag is one line naming it and the usage, exit 2, no stack —
 * before any of them starts DynamoDB Local or a server.
 */
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { promisify } from 'node:util';

const ROOT = join(__dirname, '..', '..');
const TSX = pathToFileURL(join(ROOT, 'node_modules', 'tsx', 'dist', 'loader.mjs')).href;
const SCRIPTS = ['explore', 'chaos', 'bench', 'demo', 'openapi', 'check-package'];

async function run(script: string, flag: string) {
  try {
    const { stdout, stderr } = await promisify(execFile)(
      process.execPath,
      ['--import', TSX, join(ROOT, 'bin', `${script}.ts`), flag],
      { cwd: ROOT, timeout: 60_000 },
    );
    return { code: 0, stdout, stderr };
  } catch (error) {
    const failed = error as { code: number; stdout: string; stderr: string };
    return { code: failed.code, stdout: failed.stdout, stderr: failed.stderr };
  }
}

describe.each(SCRIPTS)('bin/%s.ts', (script) => {
  it('--help: the usage, exit 0', async () => {
    const { code, stdout } = await run(script, '--help');

    expect(code).toBe(0);
    expect(stdout).toMatch(/^usage: npm run /);
  }, 60_000);

  it('an unknown flag: named on one line with the usage, exit 2, no stack', async () => {
    const { code, stderr } = await run(script, '--no-such-flag');

    expect(code).toBe(2);
    expect(stderr).toMatch(/^Unknown option '--no-such-flag'\n\nusage: npm run /);
    expect(stderr).not.toMatch(/\n\s+at /);
  }, 60_000);
});
