/** GET /tools — every tool with its JSON Schema and annotations. */
export { listToolsLambda as handler } from '../lib/http/lambdas';
