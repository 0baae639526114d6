import { healthHandler } from '../../http/store-free';

/** GET /health — no authorization, no store. */
export const handler = healthHandler();
