import { readEntry } from 'retrysafe/lambda/read';
import { getTicket } from '../app/reads';
import { services } from '../app/services';

/** GET /tickets/{ticket_key} — a ticket of the caller's tenant. */
export const handler = readEntry(getTicket, services);
