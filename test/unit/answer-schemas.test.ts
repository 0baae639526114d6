import * as z from 'zod/mini';
import type * as ReadAnswers from '../../lib/reads/answers';
import type * as Catalog from '../../lib/tools/catalog';
import { loadWithZodBuildersCounted } from '../helpers/zod-builders';

const COUNTED = ['object', 'strictObject', 'looseObject', 'union', 'toJSONSchema'] as const;

/**
 * Loads the catalog and the reads' answers in a registry of their own, with zod/mini's object, union and
 * JSON Schema builders counted: every call they make, at load and after, lands in `calls`.
 */
function loadCounted() {
  const { calls, loaded } = loadWithZodBuildersCounted(COUNTED, () => ({
    catalog: require('../../lib/tools/catalog') as typeof Catalog,
    reads: require('../../lib/reads/answers') as typeof ReadAnswers,
  }));
  return { calls, ...loaded };
}

describe('the answer schemas (catalog, reads)', () => {
  it('are built on first use, not when their modules load: a call lists nothing', () => {
    const { calls, catalog, reads } = loadCounted();
    const atLoad = [...calls];

    catalog.describeTool({
      name: 'send_note',
      description: 'Sends a note.',
      args: z.strictObject({ text: z.string() }),
      annotations: { destructiveHint: false, openWorldHint: false },
    });
    catalog.jsonSchemaOf(reads.operationAnswer);

    expect(atLoad).toEqual([]);
    expect(calls).toEqual(expect.arrayContaining(['strictObject', 'union', 'toJSONSchema']));
  });
});
