import { Logger } from '@aws-lambda-powertools/logger';

/** The JSON lines written to stdout and stderr from now until `restore`. */
export function capturedLines() {
  const lines: Array<Record<string, unknown>> = [];
  function capture(chunk: string | Uint8Array): boolean {
    for (const line of String(chunk).split('\n').filter(Boolean)) lines.push(JSON.parse(line));
    return true;
  }
  const writes = [
    jest.spyOn(process.stdout, 'write').mockImplementation(capture),
    jest.spyOn(process.stderr, 'write').mockImplementation(capture),
  ];
  return {
    lines,
    restore: () => {
      for (const write of writes) write.mockRestore();
    },
  };
}

/**
 * A Powertools Logger at INFO whose JSON lines the test reads: stdout and stderr (where it writes errors)
 * are captured until `restore`.
 */
export function capturedLogger() {
  return { logger: new Logger({ serviceName: 'retrysafe', logLevel: 'INFO' }), ...capturedLines() };
}
