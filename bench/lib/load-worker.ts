import autocannon from 'autocannon';
import type { LoadOptions, LoadResult } from './load.js';

/**
 * The load generator, in its own process (forked by `runLoad`): one autocannon run, its figures
 * sent back over IPC. A request body may carry `{{n}}`, replaced by a number unique to the run.
 */
async function run(options: LoadOptions): Promise<LoadResult> {
  const paths = Array.isArray(options.path) ? options.path : [options.path];
  let n = 0;
  const template = options.bodyTemplate;
  const requests = paths.map((path) => ({
    method: options.method ?? 'GET',
    path,
    ...(template === undefined
      ? {}
      : {
          setupRequest: (request: any) => ({ ...request, body: template.replaceAll('{{n}}', String(n++)) }),
        }),
  }));
  const result = await autocannon({
    url: options.url,
    connections: options.connections,
    duration: options.durationS,
    headers: options.headers ?? {},
    requests,
  });
  const ok = (result as unknown as Record<string, number>)['2xx'] ?? 0;
  return {
    rate: ok / result.duration,
    p50: result.latency.p50,
    p99: result.latency.p99,
    ok,
    non2xx: result.non2xx,
    errors: result.errors,
    timeouts: result.timeouts,
    durationS: result.duration,
  };
}

process.once('message', (options: LoadOptions) => {
  run(options).then(
    (result) => process.send!({ result }, () => process.exit(0)),
    (error: unknown) => process.send!({ error: String((error as Error)?.stack ?? error) }, () => process.exit(1)),
  );
});
