/** zod/mini's builders a test can count. */
export type ZodBuilder = 'object' | 'strictObject' | 'looseObject' | 'union' | 'lazy' | 'toJSONSchema';

/**
 * Runs `load` (which requires modules) in a module registry of its own, where zod/mini's `builders` are
 * counted: every call made while loading and afterwards through what was loaded lands in `calls`.
 */
export function loadWithZodBuildersCounted<T>(
  builders: readonly ZodBuilder[],
  load: () => T,
): { calls: string[]; loaded: T } {
  const calls: string[] = [];
  let loaded: T | undefined;
  jest.isolateModules(() => {
    const actual = jest.requireActual('zod/mini');
    const counted = Object.fromEntries(
      builders.map((name) => [
        name,
        function countedBuilder(...args: unknown[]) {
          calls.push(name);
          return actual[name](...args);
        },
      ]),
    );
    jest.doMock('zod/mini', () => ({ ...actual, ...counted }));
    loaded = load();
  });
  return { calls, loaded: loaded as T };
}
