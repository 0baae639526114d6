import { refund } from '../lib/tools/refund';
import { toolEntry } from './shared/tool-entry';

/** POST /tools/refund — behind API Gateway's JWT authorizer. */
export const handler = toolEntry(refund);
