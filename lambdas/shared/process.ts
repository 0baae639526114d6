import { createServices } from '../../lib/services';

/**
 * This process's services, built once from its environment when the entry point loads (a Lambda
 * container reuses them across invocations). Entry points are the only place that composes.
 */
export const services = createServices(process.env);
