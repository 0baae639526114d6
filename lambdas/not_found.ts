/** $default — any request no route matches. */
export { notFoundLambda as handler } from '../lib/http/lambdas';
