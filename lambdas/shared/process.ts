import type { Tracer } from '@aws-lambda-powertools/tracer';
import { createServices } from '../../lib/services';

/**
 * This process's services, built once from its environment when the entry point loads (a Lambda
 * container reuses them across invocations). Entry points are the only place that composes.
 */
export const services = createServices(process.env);

/**
 * X-Ray, as deep as the deployment asks. Lambda's active tracing records every invocation at no cost
 * to the function; the Powertools Tracer (from the Powertools layer, not the bundle) adds a subsegment
 * per DynamoDB, SQS and HTTPS call (the payment provider's) — and costs every call of the process, since
 * the X-Ray SDK it loads hooks every async resource. So it is loaded only where Powertools would trace:
 * on Lambda, unless `POWERTOOLS_TRACE_ENABLED` is `false` (the stack's `tracing` choice sets it; an
 * operator can flip it on one function). Elsewhere it is never loaded.
 */
export const tracer: Tracer | undefined = tracesCalls(process.env) ? loadTracer() : undefined;
tracer?.captureAWSv3Client(services.client);

function tracesCalls(env: NodeJS.ProcessEnv): boolean {
  return Boolean(env.AWS_EXECUTION_ENV) && env.POWERTOOLS_TRACE_ENABLED?.toLowerCase() !== 'false';
}

function loadTracer(): Tracer {
  // Required here, not imported at the top: a process that does not trace never loads the X-Ray SDK.
  const { Tracer } = require('@aws-lambda-powertools/tracer') as typeof import('@aws-lambda-powertools/tracer');
  return new Tracer({ serviceName: process.env.POWERTOOLS_SERVICE_NAME || 'retrysafe' });
}
