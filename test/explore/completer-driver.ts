import { Completer } from '../../lib/idempotency';
import type { InvocationDeadline } from '../../lib/idempotency/types';
import { IDEMPOTENCY_ATTRIBUTES, tableName } from '../../lib/store/tables';
import type { ExploreWorld } from './world';

/**
 * The completer as the stack runs it: a sweep of the idempotency table's stream since its checkpoint,
 * finishing the claims whose lock expired.
 */
export class CompleterDriver {
  readonly #completer: Completer;

  constructor(world: ExploreWorld) {
    this.#completer = new Completer({
      client: world.client,
      streams: world.streams,
      runtime: world.runtime,
      tools: Object.values(world.tools),
      tableName: tableName('idempotency', world.env),
      attributes: IDEMPOTENCY_ATTRIBUTES,
    });
  }

  /** A new schedule: nothing to reset (the checkpoint carries over). */
  async reset(): Promise<void> {}

  /** One invocation: a sweep. */
  async once(deadline: () => InvocationDeadline): Promise<{ records: number; rechecks: number }> {
    const report = await this.#completer.sweep(deadline());
    return { records: report.recordsRead, rechecks: report.abandonedFound + report.stillRunning };
  }

  /** Sweeps until one finds nothing left to do (at most `rounds`). */
  async drain(deadline: () => InvocationDeadline, _advanceTo: (ms: number) => void, rounds = 8): Promise<boolean> {
    for (let round = 0; round < rounds; round++) {
      const report = await this.#completer.sweep(deadline());
      if (report.abandonedFound === 0 && report.stillRunning === 0) return true;
    }
    return false;
  }
}
