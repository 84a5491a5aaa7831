// A fake AWS endpoint for tests: one node:http server on 127.0.0.1 (random port) that speaks
// CloudWatch Logs and ACM (awsJson1_1), Route 53 (restXml) and STS (awsQuery), so the real
// AWS SDK v3 clients can be pointed at it with `endpoint`.
//
//   const aws = await startFakeAws();
//   const client = new CloudWatchLogsClient({ endpoint: aws.endpoint, region: 'us-east-1', credentials: FAKE_CREDENTIALS });
//   aws.logs.putLogEvents('/app', 'web/1', [{ timestamp: 1700000000000, message: 'hello' }]);
//   aws.failNext('FilterLogEvents', { code: 'ThrottlingException', times: 2 });
//   ... exercise the code under test ...
//   expect(aws.callsTo('FilterLogEvents')).toHaveLength(3);
//   await aws.close();
//
// State lives in `aws.logs`, `aws.acm`, `aws.route53`, `aws.sts` (the first three have an `options` object
// that can be changed at any time). Every request is recorded in `aws.calls` before faults apply.
// Errors use the real wire formats: JSON `{"__type","message"}` + `x-amzn-errortype`, XML
// `<ErrorResponse><Error><Type/><Code/><Message/></Error><RequestId/></ErrorResponse>`.
import { type IncomingMessage, type Server, type ServerResponse, createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { FakeAcm, type FakeAcmOptions } from './acm.js';
import {
  AwsError,
  type DelaySpec,
  FaultBook,
  type FaultSpec,
  type FakeService,
  type RecordedCall,
  defaultStatusFor,
  isRecord,
  requestId,
} from './core.js';
import { FakeLiveTail, type FakeLiveTailOptions } from './live-tail.js';
import { FakeLogs, type FakeLogsOptions } from './logs.js';
import { FakeRoute53, type FakeRoute53Options, ROUTE53_XMLNS } from './route53.js';
import { FakeSts, STS_XMLNS } from './sts.js';
import { escapeXml } from './xml.js';

export {
  AwsError,
  FAKE_ACCOUNT_ID,
  type DelaySpec,
  type FaultSpec,
  type FakeService,
  type RecordedCall,
  type TimeInput,
} from './core.js';
export * from './logs.js';
export * from './live-tail.js';
export * from './acm.js';
export * from './route53.js';
export * from './sts.js';

/**
 * Static dummy credentials for SDK clients pointed at the fake. Not frozen on purpose: the SDK
 * writes a `$source` property onto the credentials object it is given (a frozen one makes every
 * call fail with "Cannot set properties of undefined (setting 'CREDENTIALS_CODE')").
 */
export const FAKE_CREDENTIALS: { accessKeyId: string; secretAccessKey: string } = {
  accessKeyId: 'AKIAFAKEFAKEFAKEFAKE',
  secretAccessKey: 'fake-secret-access-key',
};

export interface FakeAwsOptions {
  logs?: Partial<FakeLogsOptions>;
  liveTail?: Partial<FakeLiveTailOptions>;
  acm?: Partial<FakeAcmOptions>;
  route53?: Partial<FakeRoute53Options>;
  /** Print unexpected handler exceptions (bugs in the fake) to stderr. Default true. */
  logUnexpectedErrors?: boolean;
}

/**
 * Replaces the built-in answer of one operation. Return the JSON body (Logs/ACM) or the XML
 * document (Route 53/STS); return `undefined` to fall through to the built-in behaviour;
 * throw an `AwsError` to answer an AWS error.
 */
export type Interceptor = (input: Record<string, unknown>, call: RecordedCall) => unknown;

export interface FakeAws {
  /** `http://127.0.0.1:<port>` — pass as `endpoint` to every SDK client. */
  readonly endpoint: string;
  readonly port: number;
  readonly logs: FakeLogs;
  /** StartLiveTail sessions over `logs` (an event stream answer; see live-tail.ts). */
  readonly liveTail: FakeLiveTail;
  readonly acm: FakeAcm;
  readonly route53: FakeRoute53;
  readonly sts: FakeSts;
  /** Every request received, in arrival order (including ones answered with an injected fault). */
  readonly calls: readonly RecordedCall[];
  /** Calls of one operation (e.g. `FilterLogEvents`). */
  callsTo(op: string): RecordedCall[];
  clearCalls(): void;
  /** Exceptions thrown by the fake itself (answered as 500 InternalFailure). Tests may assert it stays empty. */
  readonly unexpectedErrors: readonly unknown[];
  /** The next `fault.times` (default 1) calls of `op` (`*` = any) fail with `fault.code` (default ThrottlingException). */
  failNext(op: string, fault?: FaultSpec): void;
  /** Delays calls of `op` (`*` = any) by `ms` before they are handled: every call, or the next `opts.times`. */
  delay(op: string, ms: number, opts?: DelaySpec): void;
  clearFaults(): void;
  /** Overrides one operation; pass `undefined` to remove the override. */
  intercept(op: string, fn: Interceptor | undefined): void;
  close(): Promise<void>;
}

type Protocol = 'json' | 'restXml' | 'query';

interface Decoded {
  protocol: Protocol;
  service: FakeService;
  op: string;
  input: Record<string, unknown>;
}

const JSON_TARGETS: Record<string, FakeService> = {
  Logs_20140328: 'logs',
  CertificateManager: 'acm',
};

function parseAuthorization(header: string | undefined): { accessKeyId?: string; region?: string; service?: string } {
  const m = header ? /Credential=([^/,\s]+)\/\d{8}\/([^/]+)\/([^/]+)\/aws4_request/.exec(header) : null;
  if (!m) return {};
  return { accessKeyId: m[1], region: m[2], service: m[3] };
}

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}

class FakeAwsServer implements FakeAws {
  readonly logs: FakeLogs;
  readonly liveTail: FakeLiveTail;
  readonly acm: FakeAcm;
  readonly route53: FakeRoute53;
  readonly sts = new FakeSts();
  readonly calls: RecordedCall[] = [];
  readonly unexpectedErrors: unknown[] = [];
  private readonly faults = new FaultBook();
  private readonly interceptors = new Map<string, Interceptor>();
  private readonly sleepers = new Set<{ timer: NodeJS.Timeout; resolve: () => void }>();
  private readonly server: Server;
  private readonly logUnexpected: boolean;
  port = 0;

  constructor(options: FakeAwsOptions) {
    this.logs = new FakeLogs(options.logs);
    this.liveTail = new FakeLiveTail(this.logs, options.liveTail);
    this.acm = new FakeAcm(options.acm);
    this.route53 = new FakeRoute53(options.route53);
    this.logUnexpected = options.logUnexpectedErrors ?? true;
    this.server = createServer((req, res) => {
      this.onRequest(req, res).catch((err: unknown) => {
        this.unexpectedErrors.push(err);
        if (!res.headersSent) {
          res.writeHead(500, { 'content-type': 'text/plain' });
          res.end(String(err));
        } else {
          res.destroy();
        }
      });
    });
  }

  get endpoint(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  async listen(): Promise<void> {
    await new Promise<void>((resolve, reject) => {
      this.server.once('error', reject);
      this.server.listen(0, '127.0.0.1', () => {
        this.server.off('error', reject);
        resolve();
      });
    });
    this.port = (this.server.address() as AddressInfo).port;
  }

  callsTo(op: string): RecordedCall[] {
    return this.calls.filter((c) => c.op === op);
  }

  clearCalls(): void {
    this.calls.length = 0;
  }

  failNext(op: string, fault: FaultSpec = {}): void {
    this.faults.failNext(op, fault);
  }

  delay(op: string, ms: number, opts?: DelaySpec): void {
    this.faults.delay(op, ms, opts);
  }

  clearFaults(): void {
    this.faults.clear();
  }

  intercept(op: string, fn: Interceptor | undefined): void {
    if (fn) this.interceptors.set(op, fn);
    else this.interceptors.delete(op);
  }

  async close(): Promise<void> {
    for (const s of this.sleepers) {
      clearTimeout(s.timer);
      s.resolve();
    }
    this.sleepers.clear();
    this.liveTail.close();
    const closed = new Promise<void>((resolve) => this.server.close(() => resolve()));
    this.server.closeAllConnections();
    await closed;
  }

  private sleep(ms: number): Promise<void> {
    if (ms <= 0) return Promise.resolve();
    return new Promise((resolve) => {
      const entry = {
        timer: setTimeout(() => {
          this.sleepers.delete(entry);
          resolve();
        }, ms),
        resolve,
      };
      this.sleepers.add(entry);
    });
  }

  // -------------------------------------------------------------- request flow

  private async onRequest(req: IncomingMessage, res: ServerResponse): Promise<void> {
    res.on('error', () => undefined);
    const body = await readBody(req);
    const url = new URL(req.url ?? '/', 'http://127.0.0.1');
    const auth = parseAuthorization(req.headers.authorization);

    let decoded: Decoded;
    try {
      decoded = this.decode(req, url, body);
    } catch (err) {
      const protocol: Protocol = req.headers['x-amz-target']
        ? 'json'
        : url.pathname.startsWith('/2013-04-01/')
          ? 'restXml'
          : 'query';
      const e = err instanceof AwsError ? err : new AwsError('SerializationException', String(err));
      this.sendError(res, protocol, protocol === 'restXml' ? 'route53' : protocol === 'json' ? 'logs' : 'sts', e);
      return;
    }

    const call: RecordedCall = {
      service: decoded.service,
      op: decoded.op,
      input: decoded.input,
      region: auth.region,
      accessKeyId: auth.accessKeyId,
      at: Date.now(),
    };
    this.calls.push(call);

    const delayMs = this.faults.takeDelay(decoded.op);
    const fault = this.faults.takeFault(decoded.op);
    if (fault) {
      await this.sleep(delayMs + (fault.delayMs ?? 0));
      if (fault.reset) {
        call.status = 0;
        call.errorCode = 'ECONNRESET';
        req.socket.destroy();
        return;
      }
      if (fault.hang) {
        // close() ends it (closeAllConnections); until then the client waits.
        call.status = 0;
        call.errorCode = 'HANG';
        return;
      }
      if (fault.rawBody !== undefined || fault.cutMidBody) {
        const text = fault.rawBody ?? this.builtInText(decoded, call, auth.region ?? 'us-east-1');
        this.sendRaw(res, req, decoded.protocol, fault.status ?? 200, text, fault.cutMidBody === true, call);
        return;
      }
      const code = fault.code ?? 'ThrottlingException';
      const error = new AwsError(
        code,
        fault.message ?? (code.startsWith('Throttl') ? 'Rate exceeded' : `Injected ${code}`),
        fault.status ?? defaultStatusFor(code),
      );
      this.sendError(res, decoded.protocol, decoded.service, error, call, fault.retryAfterSeconds);
      return;
    }
    await this.sleep(delayMs);

    try {
      if (decoded.service === 'logs' && decoded.op === 'StartLiveTail') {
        this.liveTail.open(decoded.input, call, req, res);
        return;
      }
      const result = this.dispatch(decoded, call, auth.region ?? 'us-east-1');
      this.sendOk(res, decoded.protocol, result, call);
    } catch (err) {
      if (err instanceof AwsError) {
        this.sendError(res, decoded.protocol, decoded.service, err, call);
        return;
      }
      this.unexpectedErrors.push(err);
      if (this.logUnexpected) console.error('fake-aws: unexpected error in', decoded.op, err);
      this.sendError(res, decoded.protocol, decoded.service, new AwsError('InternalFailure', String(err), 500), call);
    }
  }

  private decode(req: IncomingMessage, url: URL, body: string): Decoded {
    const method = req.method ?? 'GET';
    const target = req.headers['x-amz-target'];
    if (typeof target === 'string') {
      const dot = target.indexOf('.');
      const service = JSON_TARGETS[target.slice(0, dot)];
      const op = target.slice(dot + 1);
      if (dot < 0 || !service) throw new AwsError('UnknownOperationException', `Unknown target ${target}`);
      let input: unknown = {};
      if (body.trim() !== '') {
        try {
          input = JSON.parse(body);
        } catch {
          throw new AwsError('SerializationException', 'Request body is not valid JSON');
        }
      }
      if (!isRecord(input)) throw new AwsError('SerializationException', 'Request body must be a JSON object');
      return { protocol: 'json', service, op, input };
    }
    if (url.pathname.startsWith('/2013-04-01/')) {
      const route = this.route53.route(method, url.pathname);
      if (!route) throw new AwsError('InvalidAction', `No Route 53 operation for ${method} ${url.pathname}`);
      return {
        protocol: 'restXml',
        service: 'route53',
        op: route.op,
        input: this.route53.decodeInput(route, url.searchParams, body),
      };
    }
    const contentType = req.headers['content-type'] ?? '';
    if (method === 'POST' && contentType.startsWith('application/x-www-form-urlencoded')) {
      const { op, input } = this.sts.decodeInput(body);
      return { protocol: 'query', service: 'sts', op, input };
    }
    throw new AwsError('UnknownOperationException', `The fake cannot route ${method} ${url.pathname}`);
  }

  private dispatch(d: Decoded, call: RecordedCall, region: string): unknown {
    const interceptor = this.interceptors.get(d.op);
    if (interceptor) {
      const out = interceptor(d.input, call);
      if (out !== undefined) return out;
    }
    switch (d.service) {
      case 'logs':
        return this.logs.handle(d.op, d.input, region);
      case 'acm':
        return this.acm.handle(d.op, d.input, region);
      case 'route53':
        return this.route53.handle(d.op, d.input);
      case 'sts':
        return this.sts.handle(d.op, d.input, call.accessKeyId);
    }
  }

  /** The text the operation would answer without the fault (its side effects happen). */
  private builtInText(d: Decoded, call: RecordedCall, region: string): string {
    const result = this.dispatch(d, call, region);
    return d.protocol === 'json' ? JSON.stringify(result ?? {}) : String(result);
  }

  /** A raw answer (a fault): any text, or the first half of it before the socket is destroyed. */
  private sendRaw(
    res: ServerResponse,
    req: IncomingMessage,
    protocol: Protocol,
    status: number,
    text: string,
    cut: boolean,
    call: RecordedCall,
  ): void {
    call.status = cut ? 0 : status;
    call.errorCode = cut ? 'CUT_MID_BODY' : 'RAW_BODY';
    const bytes = Buffer.from(text, 'utf8');
    res.writeHead(status, {
      'content-type': protocol === 'json' ? 'application/x-amz-json-1.1' : 'text/xml',
      'content-length': bytes.length,
      'x-amzn-requestid': requestId(),
    });
    if (!cut) {
      res.end(bytes);
      return;
    }
    res.write(bytes.subarray(0, Math.floor(bytes.length / 2)), () => req.socket.destroy());
  }

  private sendOk(res: ServerResponse, protocol: Protocol, result: unknown, call: RecordedCall): void {
    call.status = 200;
    const rid = requestId();
    if (protocol === 'json') {
      const text = JSON.stringify(result ?? {});
      res.writeHead(200, {
        'content-type': 'application/x-amz-json-1.1',
        'content-length': Buffer.byteLength(text),
        'x-amzn-requestid': rid,
      });
      res.end(text);
      return;
    }
    const text = typeof result === 'string' ? result : String(result);
    res.writeHead(200, {
      'content-type': 'text/xml',
      'content-length': Buffer.byteLength(text),
      'x-amzn-requestid': rid,
    });
    res.end(text);
  }

  private sendError(
    res: ServerResponse,
    protocol: Protocol,
    service: FakeService,
    err: AwsError,
    call?: RecordedCall,
    retryAfterSeconds?: number,
  ): void {
    if (call) {
      call.status = err.status;
      call.errorCode = err.code;
    }
    const rid = requestId();
    const headers: Record<string, string | number> = { 'x-amzn-requestid': rid };
    if (retryAfterSeconds !== undefined) headers['retry-after'] = retryAfterSeconds;
    let text: string;
    if (protocol === 'json') {
      headers['content-type'] = 'application/x-amz-json-1.1';
      headers['x-amzn-errortype'] = err.code;
      text = JSON.stringify({ __type: err.code, message: err.message });
    } else {
      headers['content-type'] = 'text/xml';
      const xmlns = service === 'sts' ? STS_XMLNS : ROUTE53_XMLNS;
      text =
        `<?xml version="1.0" encoding="UTF-8"?>\n<ErrorResponse xmlns="${xmlns}"><Error>` +
        `<Type>${err.status >= 500 ? 'Receiver' : 'Sender'}</Type><Code>${escapeXml(err.code)}</Code>` +
        `<Message>${escapeXml(err.message)}</Message></Error><RequestId>${rid}</RequestId></ErrorResponse>`;
    }
    headers['content-length'] = Buffer.byteLength(text);
    res.writeHead(err.status, headers);
    res.end(text);
  }
}

/** Starts a fake AWS endpoint on 127.0.0.1 with a random port. Call `close()` when done. */
export async function startFakeAws(options: FakeAwsOptions = {}): Promise<FakeAws> {
  const fake = new FakeAwsServer(options);
  await fake.listen();
  return fake;
}
