import type { FastifyBaseLogger } from 'fastify';
import type { Bindings, ChildLoggerOptions, Level, Logger } from 'pino';

type LogMethod = (...args: unknown[]) => void;

/**
 * A request's logger, made on first use. Fastify gives every request a pino child of the server's logger with the
 * request id bound, and Berth binds the caller once it is known: a child and a re-serialized set of bindings per
 * request, although most requests log nothing but their access line. This logger keeps the bindings and makes the
 * child only when something logs through it at a level that is enabled; the access line (`AccessLog`) is written
 * by the server's logger with the bindings as its first fields, which is the line the child would have written.
 */
export class RequestLogger {
  readonly #parent: Logger;
  readonly #options: ChildLoggerOptions;
  /** The request's bindings, in the order they were added; kept in step with the child once it exists. */
  readonly #bindings: Bindings;
  #child: Logger | undefined;

  private constructor(parent: Logger, bindings: Bindings, options: ChildLoggerOptions) {
    this.#parent = parent;
    this.#bindings = { ...bindings };
    this.#options = options;
  }

  /**
   * Fastify's `childLoggerFactory`: a lazy logger for a pino parent, an ordinary child otherwise (no logger, or a
   * route with its own log level, whose level the lazy logger would have to mirror).
   */
  static factory(logger: FastifyBaseLogger, bindings: Bindings, options: ChildLoggerOptions): FastifyBaseLogger {
    const parent = logger as Partial<Logger>;
    if (typeof parent.isLevelEnabled !== 'function' || options.level !== undefined) {
      return logger.child(bindings, options);
    }
    return new RequestLogger(logger as Logger, bindings, options) as unknown as FastifyBaseLogger;
  }

  #made(): Logger {
    this.#child ??= this.#parent.child(this.#bindings, this.#options);
    return this.#child;
  }

  #log(level: Level, args: unknown[]): void {
    const target = this.#child ?? (this.#parent.isLevelEnabled(level) ? this.#made() : undefined);
    if (target !== undefined) (target[level] as LogMethod).apply(target, args);
  }

  /**
   * One line at `level`: `fields` after the request's bindings, as the child would write it, without making one.
   * `fields` must be a plain object (an Error goes through the ordinary methods, which serialize it as `err`).
   */
  line(level: Level, fields: Record<string, unknown>, msg: string): void {
    if (this.#child !== undefined) this.#child[level](fields, msg);
    else if (this.#parent.isLevelEnabled(level)) this.#parent[level]({ ...this.#bindings, ...fields }, msg);
  }

  get level(): string {
    return (this.#child ?? this.#parent).level;
  }

  set level(level: string) {
    this.#made().level = level;
  }

  fatal(...args: unknown[]): void {
    this.#log('fatal', args);
  }

  error(...args: unknown[]): void {
    this.#log('error', args);
  }

  warn(...args: unknown[]): void {
    this.#log('warn', args);
  }

  info(...args: unknown[]): void {
    this.#log('info', args);
  }

  debug(...args: unknown[]): void {
    this.#log('debug', args);
  }

  trace(...args: unknown[]): void {
    this.#log('trace', args);
  }

  silent(): void {}

  isLevelEnabled(level: string): boolean {
    return (this.#child ?? this.#parent).isLevelEnabled(level);
  }

  child(bindings: Bindings, options?: ChildLoggerOptions): Logger {
    return this.#made().child(bindings, options);
  }

  /** Adds bindings to this request's lines (pino's `setBindings`). */
  setBindings(bindings: Bindings): void {
    Object.assign(this.#bindings, bindings);
    this.#child?.setBindings(bindings);
  }

  bindings(): Bindings {
    return { ...this.#bindings };
  }
}
