import { Tracer } from '@aws-lambda-powertools/tracer';
import { createServices } from '../../lib/services';

/**
 * This process's services, built once from its environment when the entry point loads (a Lambda
 * container reuses them across invocations). Entry points are the only place that composes.
 */
export const services = createServices(process.env);

/**
 * X-Ray: every DynamoDB call of this process becomes a subsegment of its invocation's trace. The tracer
 * (with the X-Ray SDK, ~127 KB) comes from the Powertools Lambda layer, not the bundle; outside Lambda it
 * turns itself off.
 */
export const tracer = new Tracer({ serviceName: process.env.POWERTOOLS_SERVICE_NAME || 'retrysafe' });
tracer.captureAWSv3Client(services.client);
