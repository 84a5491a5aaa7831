import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { FastifyBaseLogger } from 'fastify';
import type { Config } from '../../config.js';
import { addressKey, type TrustProxy } from '../../core/client-address.js';

declare module 'fastify' {
  interface FastifyInstance {
    /** The open client connections and what was refused (read by the metrics and tests). */
    connections: ConnectionLimits;
  }
}

/** Why a new connection was closed as it arrived: its address was at its cap, or the process at MAX_CONNECTIONS. */
export type ConnectionRefusal = 'address' | 'process';

type Limits = Pick<Config, 'MAX_CONNECTIONS' | 'MAX_CONNECTIONS_PER_ADDRESS'>;

/** A warning about refused or evicted connections at most this often (a flood would otherwise flood the log). */
const LOG_EVERY_MS = 10_000;

interface Tracked {
  /** The per-address key it counts against; undefined for a trusted proxy (it carries many clients). */
  key: string | undefined;
  /** Requests received whose responses have not ended: a connection with none is idle. */
  inFlight: number;
}

/**
 * The open client connections of one server, counted by us instead of Node's `maxConnections` (which refuses every
 * newcomer once full, so idle keep-alive connections, kept 72 s, could shut everyone else out):
 *
 * - at most MAX_CONNECTIONS_PER_ADDRESS per client address (IPv6 by /64, see core/client-address.ts); peers named in
 *   TRUST_PROXY are exempt. A connection past it is destroyed as it arrives, before any byte is read.
 * - at most MAX_CONNECTIONS in all: a newcomer past it closes the connection idle the longest (no request in flight;
 *   a stream is busy until it ends) and is served; only when every connection is busy is the newcomer destroyed.
 *
 * Refused connections get no answer: no request has been read yet, and writing one reliably would mean holding the
 * socket open to read the request first, the very resource the limit protects (see docs/decisions.md).
 */
export class ConnectionLimits {
  readonly #open = new Map<Socket, Tracked>();
  /** Idle connections in the order they went idle: the first is the one idle the longest. */
  readonly #idle = new Set<Socket>();
  readonly #perAddress = new Map<string, number>();
  readonly refused: Record<ConnectionRefusal, number> = { address: 0, process: 0 };
  /** Idle connections closed to make room for a new one. */
  idleClosed = 0;
  #lastLoggedAt = 0;

  constructor(
    private readonly limits: Limits,
    private readonly trustProxy: TrustProxy | undefined,
    private readonly log?: FastifyBaseLogger,
  ) {}

  /** Starts counting the connections and requests of `server`. */
  attach(server: Server): void {
    server.on('connection', (socket: Socket) => this.#admit(socket));
    server.on('request', (req: IncomingMessage, res: ServerResponse) => this.#started(req.socket, res));
  }

  get open(): number {
    return this.#open.size;
  }

  get idle(): number {
    return this.#idle.size;
  }

  /** Open connections counted against `address`'s cap (0 for a trusted proxy). */
  openFrom(address: string): number {
    return this.#perAddress.get(addressKey(address)) ?? 0;
  }

  #admit(socket: Socket): void {
    const address = socket.remoteAddress;
    // Reset by the client before Node handed it over: nothing to count.
    if (address === undefined || socket.destroyed) return;
    const key = this.trustProxy?.(address, 0) === true ? undefined : addressKey(address);
    const perAddress = this.limits.MAX_CONNECTIONS_PER_ADDRESS;
    if (key !== undefined && perAddress > 0 && (this.#perAddress.get(key) ?? 0) >= perAddress) {
      this.#refuse(socket, 'address', address);
      return;
    }
    if (this.#open.size >= this.limits.MAX_CONNECTIONS) {
      const oldestIdle = this.#idle.values().next();
      if (oldestIdle.done === true) {
        this.#refuse(socket, 'process', address);
        return;
      }
      this.idleClosed += 1;
      this.#forget(oldestIdle.value);
      oldestIdle.value.destroy();
    }
    this.#open.set(socket, { key, inFlight: 0 });
    this.#idle.add(socket);
    if (key !== undefined) this.#perAddress.set(key, (this.#perAddress.get(key) ?? 0) + 1);
    socket.once('close', () => this.#forget(socket));
  }

  #started(socket: Socket, res: ServerResponse): void {
    const tracked = this.#open.get(socket);
    if (tracked === undefined) return;
    tracked.inFlight += 1;
    this.#idle.delete(socket);
    // 'close' follows the response's end on a kept-alive connection too, and comes when the connection dies first.
    res.once('close', () => {
      tracked.inFlight -= 1;
      // Re-added at the end: idle since now, the last to be closed.
      if (tracked.inFlight === 0 && this.#open.get(socket) === tracked) this.#idle.add(socket);
    });
  }

  #forget(socket: Socket): void {
    const tracked = this.#open.get(socket);
    if (tracked === undefined) return;
    this.#open.delete(socket);
    this.#idle.delete(socket);
    if (tracked.key === undefined) return;
    const left = (this.#perAddress.get(tracked.key) ?? 1) - 1;
    if (left > 0) this.#perAddress.set(tracked.key, left);
    else this.#perAddress.delete(tracked.key);
  }

  #refuse(socket: Socket, reason: ConnectionRefusal, address: string): void {
    this.refused[reason] += 1;
    socket.destroy();
    const now = Date.now();
    if (this.log === undefined || now - this.#lastLoggedAt < LOG_EVERY_MS) return;
    this.#lastLoggedAt = now;
    this.log.warn(
      {
        reason,
        address: reason === 'address' ? addressKey(address) : undefined,
        open: this.#open.size,
        refused: { ...this.refused },
        idleClosed: this.idleClosed,
      },
      reason === 'address'
        ? 'connection refused: MAX_CONNECTIONS_PER_ADDRESS reached'
        : 'connection refused: MAX_CONNECTIONS reached and no connection idle',
    );
  }
}
