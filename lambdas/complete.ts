import { completerEntry } from 'retrysafe/lambda/completer';
import { services } from '../app/services';
import { TOOLS } from '../app/tools';

/**
 * The completer: the idempotency table's stream (calls still in flight at the end of a batch get a
 * delayed recheck) and the recheck queue (each recheck finishes its call if it was abandoned).
 */
export const handler = completerEntry(TOOLS, services);
