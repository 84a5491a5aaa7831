import { type Selectable, sql } from 'kysely';
import type { ValidationRecord } from '../../core/dns-records.js';
import type { CertificateStatus } from '../../core/enums.js';
import type { Executor } from '../db.js';
import type { CertificatesTable } from '../schema.js';

export type CertificateRow = Selectable<CertificatesTable>;

/** What a validation attempt leaves on the certificate. */
export interface CertificateOutcome {
  status: CertificateStatus;
  issuedAt: Date | null;
  expiresAt: Date | null;
  validationRecords: ValidationRecord[];
}

/** Where another replica's validation attempt stands. */
export interface ValidationLease {
  status: CertificateStatus;
  validation_attempt_id: string | null;
  /** The lease ran out (by the database's clock). */
  expired: boolean;
}

export async function findCertificate(db: Executor, id: string): Promise<CertificateRow | undefined> {
  return db.selectFrom('certificates').selectAll().where('id', '=', id).executeTakeFirst();
}

export async function certificateStatus(db: Executor, id: string): Promise<CertificateStatus | undefined> {
  return (await db.selectFrom('certificates').select('status').where('id', '=', id).executeTakeFirst())?.status;
}

/**
 * Takes the validation lease of a certificate in `status` for `leaseMs` (by the database's clock),
 * when no attempt holds it or its holder's lease ran out: one atomic UPDATE, so one claimant wins.
 */
export async function claimValidationLease(
  db: Executor,
  id: string,
  status: CertificateStatus,
  token: string,
  leaseMs: number,
): Promise<CertificateRow | undefined> {
  return db
    .updateTable('certificates')
    .set({
      validation_attempt_id: token,
      validation_attempt_expires_at: sql<Date>`now() + ${`${leaseMs} milliseconds`}::interval`,
    })
    .where('id', '=', id)
    .where('status', '=', status)
    .where((eb) =>
      eb.or([eb('validation_attempt_id', 'is', null), eb('validation_attempt_expires_at', '<=', sql<Date>`now()`)]),
    )
    .returningAll()
    .executeTakeFirst();
}

export async function validationLease(db: Executor, id: string): Promise<ValidationLease | undefined> {
  return db
    .selectFrom('certificates')
    .select(['status', 'validation_attempt_id', sql<boolean>`validation_attempt_expires_at <= now()`.as('expired')])
    .where('id', '=', id)
    .executeTakeFirst();
}

/**
 * Stores an attempt's outcome and releases its lease, if `token` still holds it; answers the stored
 * status, or undefined when the lease was lost.
 */
export async function finishValidationAttempt(
  db: Executor,
  id: string,
  token: string,
  outcome: CertificateOutcome,
): Promise<CertificateStatus | undefined> {
  const updated = await db
    .updateTable('certificates')
    .set((eb) => ({
      status: outcome.status,
      issued_at: outcome.issuedAt,
      expires_at: outcome.expiresAt,
      validation_records: JSON.stringify(outcome.validationRecords),
      updated_at: sql<Date>`now()`,
      validation_attempt_id: null,
      validation_attempt_expires_at: null,
      validation_attempts: eb('validation_attempts', '+', 1),
      last_validation_attempt_at: sql<Date>`now()`,
    }))
    .where('id', '=', id)
    .where('validation_attempt_id', '=', token)
    .returning('status')
    .executeTakeFirst();
  return updated?.status;
}

/** Releases the lease `token` holds, leaving the certificate as it was. */
export async function releaseValidationLease(db: Executor, id: string, token: string): Promise<void> {
  await db
    .updateTable('certificates')
    .set({ validation_attempt_id: null, validation_attempt_expires_at: null })
    .where('id', '=', id)
    .where('validation_attempt_id', '=', token)
    .execute();
}
