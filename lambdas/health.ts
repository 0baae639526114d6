/** GET /health — no authorization. */
export { healthLambda as handler } from '../lib/http/lambdas';
