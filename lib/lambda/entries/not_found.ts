import { notFoundHandler } from '../../http/store-free';

/** $default — any request no route matches (an unknown tool included): the same JSON 404 as every miss. */
export const handler = notFoundHandler();
