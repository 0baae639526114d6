import { json } from '../lib/http/status';

/** GET /health — no authorization, no store. */
export async function handler() {
  return json(200, { ok: true });
}
