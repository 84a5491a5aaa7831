import { Writable } from 'node:stream';
import pino, { type Logger } from 'pino';
import { describe, expect, it } from 'vitest';
import { loggerOptions } from '../../src/http/log-serializers.js';
import { RequestLogger } from '../../src/http/request-logger.js';

/** A server logger writing into `lines` (one parsed object per line, `time` dropped so lines compare). */
function serverLogger(level: string): { logger: Logger; lines: Record<string, unknown>[]; raw: string[] } {
  const lines: Record<string, unknown>[] = [];
  const raw: string[] = [];
  const stream = new Writable({
    write(chunk, _encoding, done) {
      for (const line of String(chunk).split('\n')) {
        if (line === '') continue;
        raw.push(line.replace(/"time":\d+,/, ''));
        const { time: _time, ...rest } = JSON.parse(line) as Record<string, unknown>;
        lines.push(rest);
      }
      done();
    },
  });
  return { logger: pino({ ...loggerOptions(level), base: { pid: 1, hostname: 'h' } }, stream), lines, raw };
}

/** A lazy request logger, and a factory call that reports whether it made a pino child. */
function requestLogger(logger: Logger, bindings = { requestId: 'req_1' }) {
  let children = 0;
  const counting = new Proxy(logger, {
    get(target, key, receiver) {
      if (key === 'child')
        return (...args: Parameters<Logger['child']>) => {
          children += 1;
          return target.child(...args);
        };
      return Reflect.get(target, key, receiver);
    },
  });
  const log = RequestLogger.factory(counting, bindings, {}) as unknown as RequestLogger;
  return { log, children: () => children };
}

const flush = () => new Promise((resolve) => setImmediate(resolve));

describe('the request logger, made on first use', () => {
  it('writes the access line byte for byte as the eager child did, without making one', async () => {
    const lazy = serverLogger('info');
    const eager = serverLogger('info');
    const fields = { req: { method: 'GET', url: '/healthz' }, res: { statusCode: 200 }, responseTime: 1.5 };

    const { log, children } = requestLogger(lazy.logger);
    log.setBindings({ principalId: 'p-1', keyId: 'k-1' });
    log.line('info', fields, 'request completed');
    const child = eager.logger.child({ requestId: 'req_1' });
    child.setBindings({ principalId: 'p-1', keyId: 'k-1' });
    child.info(fields, 'request completed');
    await flush();

    expect(children()).toBe(0);
    expect(lazy.raw).toEqual(eager.raw);
    expect(lazy.lines[0]).toMatchObject({
      requestId: 'req_1',
      principalId: 'p-1',
      keyId: 'k-1',
      msg: 'request completed',
    });
  });

  it('makes no child for a line below the level, and a child with every binding for one at or above it', async () => {
    const { logger, lines } = serverLogger('info');
    const { log, children } = requestLogger(logger);
    log.debug({ detail: 1 }, 'not written');
    log.trace('not written either');
    expect(children()).toBe(0);

    log.setBindings({ principalId: 'p-2' });
    log.warn({ detail: 2 }, 'written');
    log.info('plain message');
    log.setBindings({ keyId: 'k-2' });
    log.line('info', { responseTime: 1 }, 'request completed');
    await flush();

    expect(children()).toBe(1);
    expect(lines).toEqual([
      expect.objectContaining({ requestId: 'req_1', principalId: 'p-2', detail: 2, msg: 'written', level: 40 }),
      expect.objectContaining({ requestId: 'req_1', principalId: 'p-2', msg: 'plain message', level: 30 }),
      expect.objectContaining({ requestId: 'req_1', principalId: 'p-2', keyId: 'k-2', msg: 'request completed' }),
    ]);
    expect(log.bindings()).toEqual({ requestId: 'req_1', principalId: 'p-2', keyId: 'k-2' });
  });

  it('serializes an error as the child would (under `err`)', async () => {
    const { logger, lines } = serverLogger('info');
    const { log } = requestLogger(logger);
    log.error(new Error('boom'), 'failed');
    await flush();
    expect(lines[0]).toMatchObject({ requestId: 'req_1', msg: 'failed', err: { message: 'boom', type: 'Error' } });
  });

  it('writes nothing at a level that is off', async () => {
    const { logger, lines } = serverLogger('warn');
    const { log, children } = requestLogger(logger);
    log.line('info', { responseTime: 1 }, 'request completed');
    log.info('nothing');
    await flush();
    expect(lines).toEqual([]);
    expect(children()).toBe(0);
    expect(log.isLevelEnabled('warn')).toBe(true);
    expect(log.isLevelEnabled('info')).toBe(false);
  });

  it('is an ordinary child for a route with its own level, or for a parent that is not pino', () => {
    const { logger } = serverLogger('info');
    expect(RequestLogger.factory(logger, { requestId: 'r' }, { level: 'debug' })).not.toBeInstanceOf(RequestLogger);
    const plain = { child: () => plain } as unknown as Logger;
    expect(RequestLogger.factory(plain, { requestId: 'r' }, {})).toBe(plain);
  });
});
