import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';

const ROOT = join(__dirname, '..', '..');

/**
 * Loads a function's bundle (its `index.js`) as Lambda's init would, with the function's `environment`,
 * in a Node process of its own that resolves packages as the Lambda Node.js runtime does
 * (`lambda-modules.cjs`: Node's own, the AWS SDK, the Powertools layer — here from this repository's
 * node_modules). Resolves to the init's error, or undefined when the bundle loaded.
 */
export async function initError(
  bundle: string,
  environment: Readonly<Record<string, string>> = {},
): Promise<string | undefined> {
  try {
    await promisify(execFile)(
      process.execPath,
      ['-r', join(__dirname, 'lambda-modules.cjs'), '-e', `require(${JSON.stringify(bundle)})`],
      {
        env: {
          PATH: process.env.PATH,
          NODE_PATH: join(ROOT, 'node_modules'),
          AWS_REGION: 'us-east-1',
          AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true',
          POWERTOOLS_LOG_LEVEL: 'SILENT',
          ...environment,
        },
        timeout: 30_000,
      },
    );
    return undefined;
  } catch (error) {
    const failed = error as { stderr?: string; message: string };
    return /^\w*Error: .*$/m.exec(failed.stderr ?? '')?.[0] ?? failed.message;
  }
}
