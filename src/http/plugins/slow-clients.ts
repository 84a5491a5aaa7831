import type { ServerOptions } from 'node:http';
import type { Config } from '../../config.js';

type Limits = Pick<Config, 'HEADERS_TIMEOUT_MS' | 'REQUEST_TIMEOUT_MS'>;

/** Node checks the timeouts below on this period (its default, 30 s, would triple a 10 s headers timeout). */
const CHECK_EVERY_MS = 1_000;

/**
 * Node's own defences against slow clients, for `http.createServer`: a client has HEADERS_TIMEOUT_MS to send its
 * headers and REQUEST_TIMEOUT_MS to send its whole request, body included; past either, Node answers 408 (written
 * as the error object by `answerClientError`) and closes the connection. Both stop once the request has been
 * received: a long answer (a log stream) is never cut by them.
 */
export function slowClientServerOptions(
  config: Limits,
): Pick<ServerOptions, 'headersTimeout' | 'requestTimeout' | 'connectionsCheckingInterval'> {
  return {
    // Node refuses a headers timeout longer than the request timeout.
    headersTimeout: Math.min(config.HEADERS_TIMEOUT_MS, config.REQUEST_TIMEOUT_MS),
    requestTimeout: config.REQUEST_TIMEOUT_MS,
    connectionsCheckingInterval: Math.min(CHECK_EVERY_MS, config.HEADERS_TIMEOUT_MS),
  };
}
