import * as z from 'zod/mini';
import type * as ReadAnswers from '../../lib/api/read-answers';
import type * as Catalog from '../../lib/tools/catalog';

const COUNTED = ['object', 'strictObject', 'looseObject', 'union', 'toJSONSchema'] as const;

/**
 * Loads the catalog and the reads' answers in a registry of their own, with zod/mini's object, union and
 * JSON Schema builders counted: every call they make, at load and after, lands in `calls`.
 */
function loadCounted() {
  const calls: string[] = [];
  let modules: { catalog: typeof Catalog; reads: typeof ReadAnswers } | undefined;
  jest.isolateModules(() => {
    const actual = jest.requireActual('zod/mini');
    const counted = Object.fromEntries(
      COUNTED.map((name) => [
        name,
        function countedBuilder(...args: unknown[]) {
          calls.push(name);
          return actual[name](...args);
        },
      ]),
    );
    jest.doMock('zod/mini', () => ({ ...actual, ...counted }));
    modules = {
      catalog: require('../../lib/tools/catalog') as typeof Catalog,
      reads: require('../../lib/api/read-answers') as typeof ReadAnswers,
    };
  });
  return { calls, ...modules! };
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
