/** The line aws-cdk-lib's asset staging writes to stderr, unconditionally, before it bundles each function. */
const BUNDLING_PROGRESS = /^Bundling asset \S+\.\.\.\n$/;

/**
 * Builds a stack whose functions are bundled, without CDK's "Bundling asset <path>..." line per function
 * on stderr (no option turns it off; esbuild's own output is quiet at the stack's `logLevel`): `npm test`
 * prints test results. Everything else written to stderr meanwhile, a warning or an error, goes through.
 */
export function withoutBundlingProgress<T>(build: () => T): T {
  const write = process.stderr.write;
  process.stderr.write = function writeUnlessProgress(chunk: unknown, ...rest: unknown[]): boolean {
    if (typeof chunk === 'string' && BUNDLING_PROGRESS.test(chunk)) return true;
    return (write as (...args: unknown[]) => boolean).call(process.stderr, chunk, ...rest);
  } as typeof process.stderr.write;
  try {
    return build();
  } finally {
    process.stderr.write = write;
  }
}
