/** GET /tools/{tool}/operations/{key} — the caller's own record of a client key. */
export { getOperationLambda as handler } from '../lib/http/lambdas';
