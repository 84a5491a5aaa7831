// Requests the fuzzers found answered wrongly (a 5xx, an error body that was not the error object,
// no answer at all), kept as explicit cases so they are checked on every run, not only when the
// random part happens to draw them again.
import { TOKENS } from '../../support/world.js';
import { FuzzRequest } from './fuzz-request.js';

export interface Regression {
  name: string;
  request: FuzzRequest;
  /** Sent this many times (each on its own connection): for faults that showed in some runs only. */
  repeat?: number;
}

const auth: [string, string] = ['Authorization', `Bearer ${TOKENS.owner}`];
const json: [string, string] = ['Content-Type', 'application/json'];

export const REGRESSIONS: Regression[] = [
  {
    name: 'an HTTP/1.1 request without a Host header (Node answered 400 with an empty body)',
    request: new FuzzRequest({ method: 'GET', target: '/healthz', noHost: true }),
  },
  {
    name: 'an Expect header other than 100-continue (Node answered 417 with an empty body)',
    request: new FuzzRequest({ method: 'GET', target: '/module-categories', headers: [auth, ['Expect', 'x-unknown']] }),
  },
  {
    name: 'a CONNECT request to a path (Node kept the connection open and never answered)',
    request: new FuzzRequest({ method: 'CONNECT', target: '/healthz' }),
  },
  {
    name: 'a CONNECT request to an authority (Node kept the connection open and never answered)',
    request: new FuzzRequest({ method: 'CONNECT', target: '127.0.0.1:443' }),
  },
  {
    name: 'a 20 MB body refused early (413) while the client is still sending it (the answer was lost to a connection reset in about half the runs)',
    request: new FuzzRequest({
      method: 'POST',
      target: '/module-categories',
      headers: [auth, json],
      body: Buffer.alloc(20_000_000, 0x20),
    }),
    repeat: 10,
  },
  {
    name: 'a 20 MB body after a bad token (401 before the body is read; the answer was lost to a connection reset)',
    request: new FuzzRequest({
      method: 'POST',
      target: '/cloud/logs/logs-insights',
      headers: [['Authorization', 'Bearer berth_k-owner_wrong'], json],
      body: Buffer.alloc(20_000_000, 0x20),
    }),
    repeat: 10,
  },
];
