/** GET /tickets/{ticket_key} — a ticket of the caller's tenant. */
export { getTicketLambda as handler } from '../lib/http/lambdas';
