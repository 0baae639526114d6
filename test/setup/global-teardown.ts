import type { TestStore } from '../../lib/testing';

export default async function globalTeardown(): Promise<void> {
  await (globalThis as { testStore?: TestStore }).testStore?.stop();
}
