/**
 * This repository's own commands (every file package.json's scripts run with tsx and no arguments of their
 * own: npm run explore, chaos, bench, bench:profile, demo, openapi, check:package — in bin/, bench/ and
 * test/): `--help` prints the usage and exits 0; an unknown flag is one line naming it and the usage, exit 2,
 * no stack — before any of them starts DynamoDB Local or a server. (The package's own `retrysafe` command,
 * lib/cli/bin.ts, which the other scripts run with a subcommand, is not one of them.)
 */
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import { scripts } from '../../package.json';

const ROOT = join(__dirname, '..', '..');
const TSX = pathToFileURL(join(ROOT, 'node_modules', 'tsx', 'dist', 'loader.mjs')).href;
/** The files the scripts run, read from package.json wherever they live: a command added there is checked here too. */
const COMMANDS = Object.values(scripts).flatMap((script) => /^tsx (\S+\.ts)$/.exec(script)?.[1] ?? []);

async function run(file: string, flag: string) {
  try {
    const { stdout, stderr } = await promisify(execFile)(process.execPath, ['--import', TSX, join(ROOT, file), flag], {
      cwd: ROOT,
      timeout: 60_000,
    });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const failed = error as { code: number; stdout: string; stderr: string };
    return { code: failed.code, stdout: failed.stdout, stderr: failed.stderr };
  }
}

it('the scripts run the commands this suite expects', () => {
  expect(COMMANDS).toEqual(
    expect.arrayContaining([
      'test/explore/main.ts',
      'test/chaos/main.ts',
      'bench/bench.ts',
      'bench/profile.ts',
      'bin/demo.ts',
      'bin/openapi.ts',
      'bin/check-package.ts',
    ]),
  );
});

describe.each(COMMANDS)('%s', (file) => {
  it('--help: the usage, exit 0', async () => {
    const { code, stdout } = await run(file, '--help');

    expect(code).toBe(0);
    expect(stdout).toMatch(/^usage: npm run /);
  }, 60_000);

  it('an unknown flag: named on one line with the usage, exit 2, no stack', async () => {
    const { code, stderr } = await run(file, '--no-such-flag');

    expect(code).toBe(2);
    expect(stderr).toMatch(/^Unknown option '--no-such-flag'\n\nusage: npm run /);
    expect(stderr).not.toMatch(/\n\s+at /);
  }, 60_000);
});
