import { describe, expect, it } from 'vitest';
import { requestFlow } from '../../src/core/request-flow.js';

describe('requestFlow', () => {
  it('names the same request the same way, and another request or operation another way', () => {
    const query = { moduleInstanceIds: ['m1'], startTimeMs: 1, endTimeMs: 2, filter: { kind: 'text', value: 'x' } };
    const flow = requestFlow('log-query', query);
    expect(requestFlow('log-query', structuredClone(query))).toBe(flow);
    expect(flow).toMatch(/^log-query:[A-Za-z0-9_-]{22}$/);
    expect(requestFlow('log-query', { ...query, endTimeMs: 3 })).not.toBe(flow);
    expect(requestFlow('log-histogram', query)).not.toBe(flow);
    expect(requestFlow('log-ingest', undefined)).toMatch(/^log-ingest:/);
  });
});
