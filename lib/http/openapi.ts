import { openApiDocument } from '../openapi/document';
import type { AnyReadModule } from '../tools/read-module';
import type { AnyToolModule } from '../tools/tool-module';
import type { LambdaHandler } from './boundary';
import { type HttpResponse, json } from './status';

/**
 * `GET /openapi.json`: the OpenAPI 3.1 document of this API, built once from the tools and the app's own
 * reads it serves. No `servers` entry: its paths resolve against the URL it was fetched from.
 */
export function openApiHandler(tools: readonly AnyToolModule[], reads: readonly AnyReadModule[]): LambdaHandler {
  const document = openApiDocument(tools, { reads });
  return async function openApi(): Promise<HttpResponse> {
    return json(200, document);
  };
}
