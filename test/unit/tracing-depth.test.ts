/**
 * The Powertools Tracer (and the X-Ray SDK under it, whose async hook costs every call of the process)
 * is loaded only where Powertools itself would trace: on Lambda, unless `POWERTOOLS_TRACE_ENABLED` is
 * `false` — the stack's `tracing` choice. What is checked is what the entry point did to the DynamoDB
 * client: whether its calls are captured.
 */
describe('the tracing depth an entry point runs with', () => {
  const saved = { ...process.env };
  afterEach(() => {
    process.env = { ...saved };
  });

  function loadEntryProcess(env: Record<string, string | undefined>) {
    for (const [name, value] of Object.entries(env)) {
      if (value === undefined) delete process.env[name];
      else process.env[name] = value;
    }
    let loaded!: typeof import('../../lib/lambda/core-services');
    jest.isolateModules(() => {
      loaded = require('../../lib/lambda/core-services');
    });
    // What every entry factory (`retrysafe/lambda/*`) composes its process with.
    return { services: loaded.processServices(process.env), tracer: loaded.createTracer(process.env) };
  }

  it.each([
    ['on Lambda, tracing calls: captured', 'AWS_Lambda_nodejs24.x', 'true', true],
    ['on Lambda, Powertools left to its default (on): captured', 'AWS_Lambda_nodejs24.x', undefined, true],
    ['on Lambda, tracing invocations only: not captured', 'AWS_Lambda_nodejs24.x', 'false', false],
    ['outside Lambda: not captured', undefined, 'true', false],
  ])('%s', (_case, executionEnv, traceEnabled, captured) => {
    const { services, tracer } = loadEntryProcess({
      AWS_EXECUTION_ENV: executionEnv,
      POWERTOOLS_TRACE_ENABLED: traceEnabled,
      AWS_XRAY_CONTEXT_MISSING: 'IGNORE_ERROR',
      // Node's http and https are shared by every suite this worker runs: left unpatched.
      POWERTOOLS_TRACER_CAPTURE_HTTPS_REQUESTS: 'false',
    });

    const middleware = services.client.middlewareStack.identify();
    expect(tracer !== undefined).toBe(captured);
    expect(middleware.some((name) => name.startsWith('XRaySDKInstrumentation'))).toBe(captured);
    services.client.destroy();
  });
});
