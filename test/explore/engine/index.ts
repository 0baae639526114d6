import { startDynamoDBLocal } from '../../../lib/local/dynamodb-local';
import { MemoryDynamoDB } from './memory-dynamodb';
import { type MemoryRequestHandler, memoryRequestHandler } from './request-handler';

export { MemoryDynamoDB } from './memory-dynamodb';
export { divertDefaultHandler, memoryRequestHandler } from './request-handler';

/** The stores the explorer runs on: DynamoDB Local (CI's truth) or the in-memory model of it. */
export const ENGINES = ['local', 'memory'] as const;
export type EngineName = (typeof ENGINES)[number];

/** How a world's clients reach their store. */
export interface StoreConnection {
  /** The endpoint the clients are configured with (the in-memory engine never connects to it). */
  readonly endpoint: string;
  /** Replaces the SDK's HTTP handler. @default the SDK's own (HTTP to `endpoint`) */
  readonly requestHandler?: MemoryRequestHandler;
  /** Drops a namespace's tables once its world is done with them. @default nothing (DynamoDB Local keeps them) */
  forget?(namespace: string): void;
}

/** A store the explorer started (or was pointed at), until `stop`. */
export interface ExploreStore {
  readonly engine: EngineName;
  readonly connection: StoreConnection;
  /** Requests the store could not answer as DynamoDB would (the model's gaps): the explorer stops on them. */
  readonly unmodelled: readonly string[];
  stop(): Promise<void>;
}

/** The endpoint the in-memory engine's clients are built with: reserved, never resolved. */
export const MEMORY_ENDPOINT = 'http://dynamodb.in-memory.invalid';

/**
 * Starts the explorer's store: DynamoDB Local (or the one at `endpoint`), or the in-memory engine —
 * one engine for every world, each world in the namespace of its own access key, as on DynamoDB Local.
 */
export async function startExploreStore(engine: EngineName, endpoint?: string): Promise<ExploreStore> {
  if (engine === 'memory') {
    if (endpoint) throw new Error('--endpoint is a DynamoDB to use: not with --engine memory');
    const memory = new MemoryDynamoDB();
    const unmodelled: string[] = [];
    return {
      engine,
      connection: {
        endpoint: MEMORY_ENDPOINT,
        requestHandler: memoryRequestHandler(memory, unmodelled),
        forget: (namespace) => memory.forget(namespace),
      },
      unmodelled,
      stop: async () => undefined,
    };
  }
  const local = endpoint ? undefined : await startDynamoDBLocal();
  return {
    engine,
    connection: { endpoint: endpoint ?? local!.endpoint },
    unmodelled: [],
    stop: async () => local?.stop(),
  };
}

export function engineNamed(name: string | undefined): EngineName {
  const engine = name ?? 'local';
  if (!(ENGINES as readonly string[]).includes(engine)) {
    throw new Error(`--engine ${engine}: one of ${ENGINES.join(', ')}`);
  }
  return engine as EngineName;
}
