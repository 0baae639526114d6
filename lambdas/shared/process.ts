import type { Tracer } from '@aws-lambda-powertools/tracer';
import { createTracer } from '../../lib/lambda/core-services';
import { createServices } from '../../lib/services';

/**
 * This process's services, built once from its environment when the entry point loads (a Lambda
 * container reuses them across invocations). Entry points are the only place that composes.
 */
export const services = createServices(process.env);

/**
 * X-Ray, as deep as the deployment asks (`createTracer`: the Powertools Tracer only on Lambda, unless
 * `POWERTOOLS_TRACE_ENABLED` is `false` — the stack's `tracing` choice sets it); a subsegment per
 * DynamoDB, SQS and HTTPS call (the payment provider's). Elsewhere the X-Ray SDK is never loaded.
 */
export const tracer: Tracer | undefined = createTracer(process.env);
tracer?.captureAWSv3Client(services.client);
