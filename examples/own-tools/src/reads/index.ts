import type { ReadsOver } from 'retrysafe/lambda';
import type { Services } from '../services';

/**
 * The app's own reads (`defineReadModule` from retrysafe/tools: a GET route and a read-only MCP tool each),
 * none yet, over the app's services. The one list retrysafe.config.ts, the MCP and OpenAPI entries and the
 * CDK app (bin/app.ts) all take: a read added here is served, documented and deployed everywhere at once.
 */
export const READS: ReadsOver<Services> = [];
