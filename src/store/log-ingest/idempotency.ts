import { sql } from 'kysely';
import type { Executor } from '../db.js';

/** Idempotency keys of the ingest route (table `ingest_idempotency_keys`, migration 006). */

export interface KeyClaimRequest {
  organizationId: string;
  key: string;
  /** SHA-256 of the request's canonical form: the same key with another request is refused. */
  requestHash: string;
  /** This attempt's time, in epoch ms: events without a timestamp get it (a later takeover reuses it). */
  receivedAt: number;
  /** This attempt's own id: only its holder marks the key done or releases it. */
  claimId: string;
  /** How long the claim holds before another request with the key may take over (a crashed holder). */
  leaseMs: number;
  /** How long the key is remembered from its first use. */
  ttlMs: number;
}

export type KeyClaim =
  /** This request holds the key and stores the events; `receivedAt` is the first attempt's time. */
  | { kind: 'claimed'; receivedAt: number }
  /** A request with this key already finished: answer what it answered. */
  | { kind: 'done'; accepted: number }
  /** Another request with this key is storing its events now. */
  | { kind: 'in-use' }
  /** The key was used with another request. */
  | { kind: 'reused' };

interface KeyRow {
  request_hash: string;
  received_at: number;
  accepted: number | null;
  locked: boolean;
}

/**
 * Claims an idempotency key, atomically on any number of replicas (the primary key decides): a new or expired
 * key is taken; a live one answers what became of it. A claim whose holder stopped without finishing (its lease
 * lapsed) is taken over.
 */
export async function claimIdempotencyKey(db: Executor, r: KeyClaimRequest): Promise<KeyClaim> {
  // A few rounds at most, each lost only to another request that changed the row in between.
  for (let attempt = 0; attempt < 3; attempt++) {
    const fresh = await sql<{ received_at: number }>`insert into ingest_idempotency_keys as k
        (organization_id, key, request_hash, received_at, claim_id, accepted, locked_until, expires_at)
        values (${r.organizationId}, ${r.key}, ${r.requestHash}, ${r.receivedAt}, ${r.claimId}, null,
          now() + ${r.leaseMs}::bigint * interval '1 millisecond', now() + ${r.ttlMs}::bigint * interval '1 millisecond')
        on conflict (organization_id, key) do update set request_hash = excluded.request_hash,
          received_at = excluded.received_at, claim_id = excluded.claim_id, accepted = null,
          locked_until = excluded.locked_until, expires_at = excluded.expires_at
        where k.expires_at <= now()
        returning received_at`.execute(db);
    if (fresh.rows.length > 0) return { kind: 'claimed', receivedAt: r.receivedAt };
    const existing = await sql<KeyRow>`select request_hash, received_at, accepted, locked_until > now() as locked
        from ingest_idempotency_keys where organization_id = ${r.organizationId} and key = ${r.key}
          and expires_at > now()`.execute(db);
    const row = existing.rows[0];
    if (row === undefined) continue;
    if (row.request_hash !== r.requestHash) return { kind: 'reused' };
    if (row.accepted !== null) return { kind: 'done', accepted: Number(row.accepted) };
    if (row.locked) return { kind: 'in-use' };
    const taken = await sql<{ received_at: number }>`update ingest_idempotency_keys
        set claim_id = ${r.claimId}, locked_until = now() + ${r.leaseMs}::bigint * interval '1 millisecond'
        where organization_id = ${r.organizationId} and key = ${r.key} and request_hash = ${r.requestHash}
          and accepted is null and locked_until <= now() and expires_at > now()
        returning received_at`.execute(db);
    if (taken.rows.length > 0) return { kind: 'claimed', receivedAt: Number(taken.rows[0]!.received_at) };
  }
  return { kind: 'in-use' };
}

/** Records the answer of the request holding the claim: later requests with the key get it. */
export async function completeIdempotencyKey(
  db: Executor,
  organizationId: string,
  key: string,
  claimId: string,
  accepted: number,
): Promise<void> {
  await sql`update ingest_idempotency_keys set accepted = ${accepted}, locked_until = now()
      where organization_id = ${organizationId} and key = ${key} and claim_id = ${claimId}`.execute(db);
}

/**
 * The holder failed. Nothing stored: the key is forgotten (a retry is a first attempt). Some events stored: the
 * claim is released for a retry of the same request to take over and store the rest under the same event ids.
 */
export async function releaseIdempotencyKey(
  db: Executor,
  organizationId: string,
  key: string,
  claimId: string,
  storedAny: boolean,
): Promise<void> {
  if (storedAny) {
    await sql`update ingest_idempotency_keys set locked_until = now()
        where organization_id = ${organizationId} and key = ${key} and claim_id = ${claimId}
          and accepted is null`.execute(db);
  } else {
    await sql`delete from ingest_idempotency_keys
        where organization_id = ${organizationId} and key = ${key} and claim_id = ${claimId}
          and accepted is null`.execute(db);
  }
}

/** Deletes up to `limit` expired keys not held by a request; returns how many. */
export async function deleteExpiredIdempotencyKeys(db: Executor, limit: number): Promise<number> {
  const result = await sql`delete from ingest_idempotency_keys where (organization_id, key) in (
      select organization_id, key from ingest_idempotency_keys
      where expires_at <= now() and locked_until <= now() order by expires_at limit ${limit})`.execute(db);
  return Number(result.numAffectedRows ?? 0n);
}
