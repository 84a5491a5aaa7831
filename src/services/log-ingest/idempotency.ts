import { createHash, randomUUID } from 'node:crypto';
import { appError } from '../../core/errors.js';
import type { Db } from '../../store/db.js';
import { idempotentEventId, type LocalEventInput } from '../../store/log-ingest/events.js';
import {
  claimIdempotencyKey,
  completeIdempotencyKey,
  releaseIdempotencyKey,
} from '../../store/log-ingest/idempotency.js';
import { type IngestRequest, type IngestResult, rowsOf } from './request.js';

/**
 * How long a claim on an idempotency key holds while its request stores events: past it (the holder crashed), a
 * retry takes over. Longer than any ingest takes (the heavy-work queue, then at most 10,000 events in slices).
 */
const IDEMPOTENCY_LEASE_MS = 60_000;

/**
 * A request with an idempotency key: stored (by `store`) by the one request that claims the key (on any replica),
 * answered again to later ones with the same request, refused to a different request (422) or while the claim
 * holds (409).
 */
export async function ingestOnce(
  db: Db,
  ttlMs: number,
  request: IngestRequest,
  key: string,
  now: number,
  store: (rows: LocalEventInput[], onChunkStored: () => void) => Promise<void>,
): Promise<IngestResult> {
  const { organizationId, events } = request;
  const requestHash = hashRequest(request);
  const claimId = randomUUID();
  const claim = await claimIdempotencyKey(db, {
    organizationId,
    key,
    requestHash,
    receivedAt: now,
    claimId,
    leaseMs: IDEMPOTENCY_LEASE_MS,
    ttlMs,
  });
  if (claim.kind === 'done') return { accepted: claim.accepted, replayed: true };
  if (claim.kind === 'reused') {
    throw appError('logs:ingest:idempotency-key-reused', {
      description: 'This Idempotency-Key was first sent with a different request; use a new key for a new request.',
    });
  }
  if (claim.kind === 'in-use') {
    throw appError('logs:ingest:idempotency-key-in-use', {
      description: 'Another request with this Idempotency-Key is storing its events; retry when it has finished.',
      headers: { 'retry-after': '1' },
    });
  }
  // Ids from the organization, key and request: a retry of a request that failed mid-way skips what was stored.
  const digest = createHash('sha256').update(`${organizationId}\u0000${key}\u0000${requestHash}`).digest('hex');
  const rows = rowsOf(request, claim.receivedAt, (timestamp, index) => idempotentEventId(timestamp, index, digest));
  let storedAny = false;
  try {
    await store(rows, () => {
      storedAny = true;
    });
    await completeIdempotencyKey(db, organizationId, key, claimId, events.length);
  } catch (error) {
    await releaseIdempotencyKey(db, organizationId, key, claimId, storedAny).catch(() => undefined);
    throw error;
  }
  return { accepted: events.length, replayed: false };
}

/**
 * SHA-256 of the request in a canonical form: the target and each event's message and time (as epoch ms, so
 * `1700000000000` and `2023-11-14T22:13:20.000Z` are the same event; no time stays "no time").
 */
function hashRequest({ target, events, given }: IngestRequest): string {
  const canonical = JSON.stringify([
    target.accountId,
    target.region,
    target.logGroup,
    target.logStream,
    events.map((e, i) => [e.message, given[i] ?? null]),
  ]);
  return createHash('sha256').update(canonical).digest('hex');
}
