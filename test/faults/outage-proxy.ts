import { createServer, type Socket, connect as tcpConnect } from 'node:net';

/**
 * How the store is unreachable during an outage:
 *  - `refuse`: every connection, open or new, is reset at once (the client sees ECONNRESET);
 *  - `blackhole`: every byte is dropped, both ways, on open and new connections alike; a connection
 *    that met the black hole stays dead after it (as one whose NAT state was lost), so the client only
 *    learns of it from its own timeout.
 */
export type OutageMode = 'refuse' | 'blackhole';

/** What the proxy saw. */
export interface OutageProxyCounts {
  /** Connections accepted over the proxy's life. */
  readonly connections: number;
  /** Connections reset by a `refuse` outage. */
  readonly refused: number;
  /** Connections that met a `blackhole` outage. */
  readonly blackholed: number;
}

export interface OutageProxy {
  /** `http://127.0.0.1:<port>`: give this to the server as its store endpoint. */
  readonly url: string;
  /** The outage in force, or undefined while connections pass. */
  readonly mode: OutageMode | undefined;
  readonly counts: OutageProxyCounts;
  /** Starts an outage of this kind (or changes its kind); in force until `restore()`. */
  fail(mode: OutageMode): void;
  /** Ends the outage: new connections pass again (dead ones stay dead). */
  restore(): void;
  close(): Promise<void>;
}

/**
 * A TCP proxy on a free loopback port in front of a store (DynamoDB Local), that can make the store
 * unreachable on demand — refused or black-holed — while the store itself keeps running and keeps
 * its data. Bytes pass untouched otherwise: it knows nothing of HTTP.
 */
export async function startOutageProxy(target: string): Promise<OutageProxy> {
  const upstreamUrl = new URL(target);
  let mode: OutageMode | undefined;
  const counts = { connections: 0, refused: 0, blackholed: 0 };
  /** Every open connection, with whether it met the black hole. */
  const open = new Map<Socket, { upstream: Socket | undefined; dead: boolean }>();

  function refuse(client: Socket): void {
    counts.refused += 1;
    const state = open.get(client);
    state?.upstream?.destroy();
    client.resetAndDestroy();
  }

  function blackhole(client: Socket): void {
    const state = open.get(client);
    if (!state || state.dead) return;
    counts.blackholed += 1;
    state.dead = true;
  }

  const server = createServer(function proxyConnection(client) {
    counts.connections += 1;
    const state: { upstream: Socket | undefined; dead: boolean } = { upstream: undefined, dead: false };
    open.set(client, state);
    client.on('error', () => state.upstream?.destroy());
    client.on('close', () => {
      open.delete(client);
      state.upstream?.destroy();
    });
    if (mode === 'refuse') {
      refuse(client);
      return;
    }
    if (mode === 'blackhole') blackhole(client);

    const upstream = tcpConnect(Number(upstreamUrl.port), upstreamUrl.hostname);
    state.upstream = upstream;
    upstream.on('error', () => client.destroy());
    upstream.on('close', () => {
      if (!state.dead) client.destroy(); // a dead connection tells its client nothing, not even a close
    });
    client.on('data', function toStore(chunk) {
      if (!state.dead) upstream.write(chunk);
    });
    upstream.on('data', function fromStore(chunk) {
      if (!state.dead) client.write(chunk);
    });
  });

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const address = server.address();
  if (typeof address !== 'object' || address === null) throw new Error('outage proxy: no address');

  return {
    url: `http://127.0.0.1:${address.port}`,
    get mode() {
      return mode;
    },
    counts,
    fail(next) {
      mode = next;
      for (const client of [...open.keys()]) {
        if (next === 'refuse') refuse(client);
        else blackhole(client);
      }
    },
    restore() {
      mode = undefined;
    },
    close() {
      for (const [client, state] of open) {
        state.upstream?.destroy();
        client.destroy();
      }
      return new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
