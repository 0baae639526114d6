import { getTicketHandler } from '../lib/http/reads';
import { services } from './shared/process';

/** GET /tickets/{ticket_key} — a ticket of the caller's tenant. */
export const handler = getTicketHandler(services);
