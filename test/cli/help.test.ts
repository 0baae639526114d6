/**
 * What `retrysafe` says before it touches any store: its help, as a user of the installed package reads it
 * (only what the tarball ships can be pointed at), and the message of an operations command that was given
 * no store and found no running `retrysafe dev` — in process, on an empty directory.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { main } from '../../lib/cli/main';
import { files as shippedFiles } from '../../package.json';

const ROOT = join(__dirname, '..', '..');
const COMMANDS = ['init', 'dev', 'token', 'calls', 'complete', 'erase', 'types'];

let printed: string[];
let errors: string[];
let empty: string;
beforeEach(() => {
  printed = [];
  errors = [];
  jest.spyOn(console, 'log').mockImplementation((...parts: unknown[]) => void printed.push(parts.join(' ')));
  jest.spyOn(console, 'error').mockImplementation((...parts: unknown[]) => void errors.push(parts.join(' ')));
  empty = mkdtempSync(join(tmpdir(), 'retrysafe-help-'));
});
afterEach(() => {
  jest.restoreAllMocks();
  rmSync(empty, { recursive: true, force: true });
});

/** Every help text the command prints: its own and each command's `--help`. */
async function helpTexts(): Promise<Record<string, string>> {
  const texts: Record<string, string> = {};
  for (const argv of [['--help'], ...COMMANDS.map((command) => [command, '--help'])]) {
    printed = [];
    expect(await main(argv, empty, {})).toBe(0);
    texts[argv.join(' ')] = printed.join('\n');
  }
  return texts;
}

describe('retrysafe --help', () => {
  it('names every state `calls` lists: pending, abandoned and stalled', async () => {
    const texts = await helpTexts();

    const line = texts['--help']!.split('\n').find((text) => text.trimStart().startsWith('calls '));
    expect(line).toMatch(/\bpending\b/);
    expect(line).toMatch(/\babandoned\b/);
    expect(line).toMatch(/\bstalled\b/);
  });

  it('points only at files the package ships, and at README sections that exist', async () => {
    const texts = await helpTexts();
    const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
    const shipped = (path: string) => shippedFiles.some((entry) => path === entry || path.startsWith(`${entry}/`));

    for (const [command, text] of Object.entries(texts)) {
      const cited = [...text.matchAll(/\b((?:[\w.-]+\/)*[\w.-]+\.md)\b/g)].map((match) => match[1]!);
      const unshipped = cited.filter((path) => !shipped(path));
      expect({ command, unshipped }).toEqual({ command, unshipped: [] });
      for (const [, section] of text.matchAll(/README(?:\.md)?, "([^"]+)"/g)) {
        expect({ command, section, inReadme: readme.includes(`\n## ${section}\n`) }).toEqual({
          command,
          section,
          inReadme: true,
        });
      }
    }
  });
});

describe('an operations command with no store named and no retrysafe dev running', () => {
  it.each(['calls', 'erase'])(
    '%s: says no running dev was found, and how to start one or name a store',
    async (command) => {
      const code = await main([command, '--tenant', 'acme'], empty, {});

      expect(code).toBe(2);
      expect(errors[0]).toContain(`retrysafe ${command}: no running retrysafe dev found`);
      expect(errors[0]).toContain('npx retrysafe dev');
      expect(errors[0]).toContain('--aws --region');
      expect(errors.join('\n')).not.toMatch(/no region/);
    },
  );

  it('says so too when AWS_REGION is set (AWS was only the fallback), with what AWS would have needed', async () => {
    const code = await main(['calls', '--tenant', 'acme'], empty, { AWS_REGION: 'eu-west-1' });

    expect(code).toBe(2);
    expect(errors[0]).toContain('no running retrysafe dev found');
    expect(errors[0]).toContain('(for AWS, eu-west-1: no name for the tables idempotency (IDEMPOTENCY_TABLE)');
  });

  it('--aws without a region names the flag', async () => {
    const code = await main(['calls', '--tenant', 'acme', '--aws'], empty, {});

    expect(code).toBe(2);
    expect(errors[0]).toContain('retrysafe calls: --aws: no region (--region, or AWS_REGION)');
  });
});
