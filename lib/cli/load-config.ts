import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { configProblems, type RetrysafeConfig } from '../dev/config';
import { DevError } from '../dev/dev-error';

/** The names a config file is found by in an app's directory, in this order. */
export const CONFIG_FILES = [
  'retrysafe.config.ts',
  'retrysafe.config.mts',
  'retrysafe.config.js',
  'retrysafe.config.mjs',
];

/** The config file: `--config` as given, else the first of `CONFIG_FILES` in `cwd`. */
export function findConfig(cwd: string, given?: string): string {
  if (given !== undefined) {
    const file = resolve(cwd, given);
    if (!existsSync(file)) throw new DevError(`--config: no file ${file}`);
    return file;
  }
  const found = CONFIG_FILES.map((name) => resolve(cwd, name)).find((file) => existsSync(file));
  if (!found) {
    throw new DevError(
      `no ${CONFIG_FILES[0]} in ${cwd}: write one that exports default defineConfig({ tools, services, tables }) ` +
        "(import { defineConfig } from 'retrysafe/config'), or pass --config FILE",
    );
  }
  return found;
}

/**
 * Loads an app's config — TypeScript with no build step, through tsx's require hook (the same transform the
 * app's tests get from ts-jest or tsx) — and checks it, every problem in one error.
 */
export function loadConfig(file: string): RetrysafeConfig<unknown> {
  let loaded: unknown;
  try {
    // Required here, not at the top: only the commands that read a config load the TypeScript loader.
    // Registered on Node's own module cache (no namespace): the app's imports of retrysafe are then the
    // very modules this command runs — one copy, so its errors are the runtime's own classes.
    const tsx = require('tsx/cjs/api') as { register(): () => void };
    tsx.register();
    loaded = require(file);
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    throw new DevError(`${file}: cannot load it: ${message}`, { cause: error });
  }
  const exported = (loaded as { default?: unknown } | undefined)?.default ?? loaded;
  const config = (exported as { default?: unknown } | undefined)?.default ?? exported;
  const problems = configProblems(config);
  if (problems.length > 0) throw new DevError(`${file}:\n${problems.map((problem) => `  - ${problem}`).join('\n')}`);
  return config as RetrysafeConfig<unknown>;
}
