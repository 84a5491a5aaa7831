import { LRUCache } from 'lru-cache';
import type { Config } from '../../config.js';
import { addressKey } from '../../core/client-address.js';
import { WindowCounter } from '../../core/window-counter.js';

/** Client addresses whose failures are counted; past it the least recently seen are forgotten. */
const MAX_ADDRESSES = 100_000;

/** Tokens remembered as valid, so their holders get through while their address is blocked. */
const MAX_KNOWN_TOKENS = 10_000;
const KNOWN_TOKEN_TTL_MS = 10 * 60_000;

/**
 * Failed authentications per client address: past FAILED_AUTH_MAX in a window of FAILED_AUTH_WINDOW_MS, the
 * address is blocked until the window ends, and its requests are refused before any database lookup, unless
 * they carry a token seen valid recently (another tenant behind the same NAT keeps working). Memory is bounded:
 * both tables are LRUs. The address is `request.ip`: behind a proxy named in TRUST_PROXY the forwarded client, so
 * clients behind one proxy do not lock each other out; it is grouped as core/client-address.ts says.
 */
export class FailedAuthGuard {
  readonly #addresses: WindowCounter;
  readonly #knownTokens = new LRUCache<string, true>({ max: MAX_KNOWN_TOKENS, ttl: KNOWN_TOKEN_TTL_MS });

  constructor(
    private readonly max: number,
    windowMs: number,
  ) {
    this.#addresses = new WindowCounter(windowMs, MAX_ADDRESSES);
  }

  /** A guard, or undefined when FAILED_AUTH_MAX is 0 (off). */
  static from(config: Pick<Config, 'FAILED_AUTH_MAX' | 'FAILED_AUTH_WINDOW_MS'>): FailedAuthGuard | undefined {
    if (config.FAILED_AUTH_MAX === 0) return undefined;
    return new FailedAuthGuard(config.FAILED_AUTH_MAX, config.FAILED_AUTH_WINDOW_MS);
  }

  /** Milliseconds until `address` may authenticate again; 0 when it is not blocked. */
  blockedFor(address: string, now = Date.now()): number {
    // No failure counted anywhere (the usual case): no address to group and look up.
    if (this.#addresses.size === 0) return 0;
    const key = addressKey(address);
    if (this.#addresses.count(key, now) <= this.max) return 0;
    return this.#addresses.remainingMs(key, now);
  }

  /** Whether the token of `tokenHash` (`hashToken`) authenticated recently (its holder may pass a blocked address). */
  isKnownValid(tokenHash: string): boolean {
    return this.#knownTokens.has(tokenHash);
  }

  /** A failed authentication from `address` (and the token of `tokenHash`, if one was given, is not known valid any more). */
  failed(address: string, tokenHash?: string, now = Date.now()): void {
    this.#addresses.add(addressKey(address), now);
    if (tokenHash !== undefined) this.#knownTokens.delete(tokenHash);
  }

  /** The token of `tokenHash` (`hashToken`) authenticated. */
  succeeded(tokenHash: string): void {
    this.#knownTokens.set(tokenHash, true);
  }
}
