import { Resolver } from 'node:dns/promises';

import type { DnsRecordType } from '../../core/enums.js';

export type { DnsRecordType };

export interface DnsRecordCheck {
  name: string;
  type: DnsRecordType;
  expected: string;
}

/**
 * `absent`: the name does not exist or has no record of the type.
 * `timeout`: no usable answer in time — the lookup timed out, or the server
 * failed (SERVFAIL, REFUSED, unreachable); the caller cannot tell and should
 * try again later rather than treat the record as missing.
 */
export type DnsCheckResult = 'match' | 'mismatch' | 'absent' | 'timeout';

export interface DnsResolverOptions {
  /**
   * IP addresses, optionally with a port (`1.1.1.1`, `127.0.0.1:5353`,
   * `[::1]:53`); the system's when empty. Host names are refused by
   * `setServers` (throws ERR_INVALID_IP_ADDRESS).
   */
  servers?: string[];
  /** Upper bound on one lookup, however many servers and tries sit behind it. */
  timeoutMs: number;
  /** How long an answer, including "no such record", is reused. */
  cacheTtlMs: number;
  /** Cached lookups kept at most; the oldest go first. */
  maxCacheEntries?: number;
  now?: () => number;
}

/**
 * Thrown by the `resolve*` methods when a lookup gets no answer in time.
 * Other failures (SERVFAIL, REFUSED, unreachable server) are node:dns errors
 * with their own `code`.
 */
export class DnsTimeoutError extends Error {
  readonly code = 'ETIMEOUT';

  constructor(name: string, type: DnsRecordType, timeoutMs: number) {
    super(`DNS ${type} lookup of ${name} timed out after ${timeoutMs} ms`);
    this.name = 'DnsTimeoutError';
  }
}

/** c-ares codes meaning the answer is "nothing there": NXDOMAIN and NODATA. */
const ABSENT_CODES = new Set(['ENOTFOUND', 'ENODATA']);

interface CacheEntry {
  expiresAt: number;
  values: string[];
}

function canonicalName(name: string): string {
  return name.trim().toLowerCase().replace(/\.$/, '');
}

function errorCode(error: unknown): unknown {
  return typeof error === 'object' && error !== null ? (error as { code?: unknown }).code : undefined;
}

/**
 * DNS lookups for domain and certificate validation: bounded in time, cached
 * (negative answers too) and coalesced, so many requests checking one record
 * cost one query.
 */
export class DnsResolver {
  private readonly resolver: Resolver;
  private readonly timeoutMs: number;
  private readonly cacheTtlMs: number;
  private readonly maxCacheEntries: number;
  private readonly now: () => number;
  /** Answers here and in `inFlight` are shared between callers, so `resolve*` hand out copies. */
  private readonly cache = new Map<string, CacheEntry>();
  private readonly inFlight = new Map<string, Promise<string[]>>();

  constructor(options: DnsResolverOptions) {
    this.timeoutMs = options.timeoutMs;
    this.cacheTtlMs = options.cacheTtlMs;
    this.maxCacheEntries = options.maxCacheEntries ?? 10_000;
    this.now = options.now ?? Date.now;
    // One try per server: the race in `withTimeout` is the real bound (c-ares
    // stretches its own timeout, and tries servers one after another); this
    // keeps a query that lost the race from sending retries afterwards.
    this.resolver = new Resolver({ timeout: Math.max(1, Math.ceil(options.timeoutMs)), tries: 1 });
    if (options.servers !== undefined && options.servers.length > 0) this.resolver.setServers(options.servers);
  }

  /** TXT values, each record's character-strings joined; `[]` when there are none. */
  async resolveTxt(name: string): Promise<string[]> {
    return [...(await this.lookup(name, 'TXT'))];
  }

  /** CNAME targets as the server sent them; `[]` when there are none. */
  async resolveCname(name: string): Promise<string[]> {
    return [...(await this.lookup(name, 'CNAME'))];
  }

  /** IPv4 addresses; `[]` when there are none. */
  async resolveA(name: string): Promise<string[]> {
    return [...(await this.lookup(name, 'A'))];
  }

  /**
   * Whether `record.name` has a record of `record.type` equal to `expected`:
   * CNAME targets compare without case or trailing dot, TXT values exactly
   * (validation tokens are case-sensitive), A addresses as strings.
   */
  async check(record: DnsRecordCheck): Promise<DnsCheckResult> {
    let values: string[];
    try {
      values = await this.lookup(record.name, record.type);
    } catch {
      return 'timeout';
    }
    if (values.length === 0) return 'absent';
    const normalize = record.type === 'CNAME' ? canonicalName : (value: string) => value.trim();
    const expected = normalize(record.expected);
    return values.some((value) => normalize(value) === expected) ? 'match' : 'mismatch';
  }

  /** Forgets every cached answer; lookups in flight still complete. */
  clear(): void {
    this.cache.clear();
  }

  private lookup(rawName: string, type: DnsRecordType): Promise<string[]> {
    const name = canonicalName(rawName);
    const key = `${type} ${name}`;
    const cached = this.cache.get(key);
    if (cached !== undefined) {
      if (cached.expiresAt > this.now()) return Promise.resolve(cached.values);
      this.cache.delete(key);
    }
    const pending = this.inFlight.get(key);
    if (pending !== undefined) return pending;

    const query = this.withTimeout(this.query(name, type), name, type).then((values) => {
      this.remember(key, values);
      return values;
    });
    const settled = query.finally(() => this.inFlight.delete(key));
    this.inFlight.set(key, settled);
    return settled;
  }

  private async query(name: string, type: DnsRecordType): Promise<string[]> {
    try {
      switch (type) {
        case 'TXT':
          return (await this.resolver.resolveTxt(name)).map((chunks) => chunks.join(''));
        case 'CNAME':
          return await this.resolver.resolveCname(name);
        case 'A':
          return await this.resolver.resolve4(name);
      }
    } catch (error) {
      const code = errorCode(error);
      if (ABSENT_CODES.has(code as string)) return [];
      if (code === 'ETIMEOUT') throw new DnsTimeoutError(name, type, this.timeoutMs);
      throw error;
    }
  }

  /**
   * `node:dns` takes no AbortSignal and `Resolver.cancel()` would abort every
   * lookup of this resolver, so the late query is left to c-ares's own timeout
   * and its answer ignored.
   */
  private withTimeout(query: Promise<string[]>, name: string, type: DnsRecordType): Promise<string[]> {
    let timer: NodeJS.Timeout | undefined;
    const deadline = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new DnsTimeoutError(name, type, this.timeoutMs)), this.timeoutMs);
      timer.unref();
    });
    return Promise.race([query, deadline]).finally(() => clearTimeout(timer));
  }

  private remember(key: string, values: string[]): void {
    if (this.cacheTtlMs <= 0) return;
    this.cache.delete(key);
    while (this.cache.size >= this.maxCacheEntries) {
      const oldest = this.cache.keys().next();
      if (oldest.done === true) break;
      this.cache.delete(oldest.value);
    }
    this.cache.set(key, { expiresAt: this.now() + this.cacheTtlMs, values });
  }
}
