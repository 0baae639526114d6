import type { ReadRoute } from '../api/routes';
import { openApiDocument } from '../openapi/document';
import type { AnyToolModule } from '../tools/tool-module';
import type { LambdaHandler } from './boundary';
import { type HttpResponse, json } from './status';

/**
 * `GET /openapi.json`: the OpenAPI 3.1 document of this API, built once from the tools it serves. No
 * `servers` entry: its paths resolve against the URL it was fetched from. `reads`: the app's own reads
 * (@default the example's, `EXAMPLE_READS`).
 */
export function openApiHandler(tools: readonly AnyToolModule[], reads?: readonly ReadRoute[]): LambdaHandler {
  const document = openApiDocument(tools, reads === undefined ? {} : { reads });
  return async function openApi(): Promise<HttpResponse> {
    return json(200, document);
  };
}
