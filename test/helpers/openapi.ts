import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Ajv2020, { type ValidateFunction } from 'ajv/dist/2020';
import addFormats from 'ajv-formats';
import type { OpenApiDocument, OpenApiResponse } from '../../lib/openapi/document';

/**
 * `@seriousme/openapi-schema-validator` ships ES modules only, and Jest on Node 20 runs CommonJS and
 * cannot load them (not even through `createRequire`); so its own CLI, `validate-api`, checks the
 * document in a Node process of its own and prints the result as JSON.
 */
const VALIDATE_API = require.resolve('@seriousme/openapi-schema-validator/bin/validate-api-cli.js');

/** The document checked against the OpenAPI 3.1 schema, its `$ref`s resolved, by a maintained validator. */
export function validateOpenApi(document: object): { valid: boolean; errors?: unknown } {
  const dir = mkdtempSync(join(tmpdir(), 'retrysafe-openapi-'));
  try {
    const file = join(dir, 'openapi.json');
    writeFileSync(file, JSON.stringify(document));
    const run = spawnSync(process.execPath, [VALIDATE_API, file], { encoding: 'utf8' });
    if (run.error || !run.stdout.trim().startsWith('{')) {
      throw new Error(`validate-api did not run: ${run.error?.message ?? run.stderr}`);
    }
    return JSON.parse(run.stdout);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** The base URI the document is registered under, so that its `#/components/…` references resolve. */
const DOCUMENT_ID = 'https://retrysafe.test/openapi.json';

/** A JSON pointer into the document, as a URI fragment. */
function pointer(...tokens: string[]): string {
  return `${DOCUMENT_ID}#/${tokens.map((token) => encodeURIComponent(token.replace(/~/g, '~0').replace(/\//g, '~1'))).join('/')}`;
}

export type Method = 'get' | 'post' | 'delete';

/**
 * The schemas a document gives, compiled by Ajv (JSON Schema 2020-12, formats checked) where they
 * sit, so `$ref`s resolve into `components` as an OpenAPI tool resolves them. `strict` also refuses
 * unknown keywords and other schema mistakes, which the OpenAPI validator does not look into.
 */
export function documentSchemas(document: OpenApiDocument, { strict = false }: { strict?: boolean } = {}) {
  const ajv = new Ajv2020({ strict, allErrors: true });
  addFormats(ajv);
  // The OpenAPI members around the schemas are not JSON Schema keywords: declared, so strict mode lets them be.
  for (const member of ['openapi', 'info', 'servers', 'paths', 'components']) ajv.addKeyword(member);
  ajv.addSchema({ ...document, $id: DOCUMENT_ID });

  /** Where the response for `status` sits: its own entry, else its range (`4XX`), else `default`. */
  function responseKey(method: Method, path: string, status: number): string {
    const operation = document.paths[path]?.[method];
    if (!operation) throw new Error(`the document has no ${method.toUpperCase()} ${path}`);
    const key = [String(status), `${String(status)[0]}XX`, 'default'].find(
      (candidate) => candidate in operation.responses,
    );
    if (!key) throw new Error(`the document gives no response ${status} for ${method.toUpperCase()} ${path}`);
    return key;
  }

  return {
    /** The response the document gives for `status`. */
    response(method: Method, path: string, status: number): OpenApiResponse {
      return document.paths[path]?.[method]?.responses[responseKey(method, path, status)] as OpenApiResponse;
    },
    /** The validator of the body the document gives for `status`. */
    responseBody(method: Method, path: string, status: number): ValidateFunction {
      const key = responseKey(method, path, status);
      return ajv.compile({
        $ref: pointer('paths', path, method, 'responses', key, 'content', 'application/json', 'schema'),
      });
    },
    /** The validator of the request body the document gives. */
    requestBody(method: Method, path: string): ValidateFunction {
      return ajv.compile({
        $ref: pointer('paths', path, method, 'requestBody', 'content', 'application/json', 'schema'),
      });
    },
    /** Whether `value` is valid against an inline schema of the document (a header's). */
    accepts(schema: object, value: unknown): boolean {
      return ajv.validate(schema, value) as boolean;
    },
    /** The validator of one schema under `components/schemas`. */
    component(name: string): ValidateFunction {
      return ajv.compile({ $ref: pointer('components', 'schemas', name) });
    },
  };
}

export type DocumentSchemas = ReturnType<typeof documentSchemas>;
