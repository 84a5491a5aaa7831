import { createServer, connect, type Server, type Socket } from 'node:net';

/**
 * A TCP proxy between Berth and PostgreSQL that a test can break the way networks break:
 * - `cut('refuse')`: every connection is reset and the port stops listening (connect: ECONNREFUSED);
 * - `cut('blackhole')`: every connection is reset; new ones are accepted and then hear nothing;
 * - `stall()`: a partition: the open connections stay open but carry nothing, new ones hear nothing;
 * - `cutOn(text)`: cuts (refuse) the moment a client sends a message containing `text` (a statement),
 *   dropping that message, so the cut lands in the middle of a given request.
 * `restore()` lets traffic through again: stalled connections resume, new connections reach PostgreSQL.
 */
export interface DbProxy {
  port: number;
  /** `url` with its host and port replaced by the proxy's. */
  via(url: string): string;
  cut(mode: 'refuse' | 'blackhole'): Promise<void>;
  stall(): void;
  cutOn(text: string): Promise<void>;
  restore(): Promise<void>;
  state(): ProxyState;
  /** Connections the proxy has accepted so far. */
  accepted(): number;
  close(): Promise<void>;
}

export type ProxyState = 'open' | 'refuse' | 'blackhole' | 'stall';

interface Pair {
  client: Socket;
  upstream?: Socket;
}

export async function startDbProxy(target: { host: string; port: number }): Promise<DbProxy> {
  let state: ProxyState = 'open';
  let trigger: { text: string; fired: () => void } | undefined;
  let accepted = 0;
  const pairs = new Set<Pair>();
  /** Connections accepted while blackholed or stalled: they wait, unanswered. */
  const held = new Set<Socket>();

  const drop = (pair: Pair) => {
    pairs.delete(pair);
    pair.client.destroy();
    pair.upstream?.destroy();
  };

  const link = (client: Socket) => {
    const pair: Pair = { client };
    pairs.add(pair);
    const upstream = connect(target.port, target.host);
    pair.upstream = upstream;
    client.on('data', (chunk: Buffer) => {
      if (trigger !== undefined && chunk.includes(trigger.text)) {
        const fired = trigger.fired;
        trigger = undefined;
        fired();
        return;
      }
      if (!upstream.write(chunk)) client.pause();
    });
    upstream.on('drain', () => state === 'open' && client.resume());
    upstream.on('data', (chunk: Buffer) => {
      if (!client.write(chunk)) upstream.pause();
    });
    client.on('drain', () => state === 'open' && upstream.resume());
    for (const s of [client, upstream]) {
      s.on('error', () => drop(pair));
      s.on('close', () => drop(pair));
    }
  };

  const onConnection = (client: Socket) => {
    accepted++;
    client.on('error', () => client.destroy());
    if (state === 'open') link(client);
    else {
      // Blackholed or stalled: accepted, never answered, until restored or cut.
      client.pause();
      held.add(client);
      client.on('close', () => held.delete(client));
    }
  };

  let server: Server = createServer(onConnection);
  const listen = (port: number) =>
    new Promise<number>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, '127.0.0.1', () => {
        server.off('error', reject);
        resolve((server.address() as { port: number }).port);
      });
    });
  const port = await listen(0);

  const resetAll = () => {
    for (const pair of [...pairs]) {
      pair.client.resetAndDestroy();
      pair.upstream?.destroy();
      pairs.delete(pair);
    }
    for (const s of [...held]) s.resetAndDestroy();
    held.clear();
  };
  const stopListening = () =>
    new Promise<void>((resolve) => (server.listening ? server.close(() => resolve()) : resolve()));

  const cut = async (mode: 'refuse' | 'blackhole') => {
    state = mode;
    resetAll();
    if (mode === 'refuse') await stopListening();
  };

  return {
    port,
    via: (url) => {
      const u = new URL(url);
      u.hostname = '127.0.0.1';
      u.port = String(port);
      return u.toString();
    },
    cut,
    stall: () => {
      state = 'stall';
      for (const pair of pairs) {
        pair.client.pause();
        pair.upstream?.pause();
      }
    },
    cutOn: (text) =>
      new Promise<void>((resolve) => {
        trigger = { text, fired: () => void cut('refuse').then(resolve) };
      }),
    restore: async () => {
      const was = state;
      state = 'open';
      trigger = undefined;
      if (!server.listening) {
        server = createServer(onConnection);
        await listen(port);
      }
      for (const pair of pairs) {
        pair.client.resume();
        pair.upstream?.resume();
      }
      const waiting = [...held];
      held.clear();
      // A stalled network delivers what it held; connections accepted into a black hole were lost.
      for (const s of waiting) {
        if (was === 'stall') {
          s.resume();
          link(s);
        } else s.resetAndDestroy();
      }
    },
    state: () => state,
    accepted: () => accepted,
    close: async () => {
      trigger = undefined;
      resetAll();
      await stopListening();
    },
  };
}
