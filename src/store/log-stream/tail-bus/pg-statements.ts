/**
 * The SQL of the tail bus on PostgreSQL (tables of migration 007). Seqs are a bigint identity shared by every key;
 * per key they are in commit order, because publishes of one key take turns on an advisory lock before the identity
 * is drawn: a reader that saw seq n of a key never sees a smaller one of it commit later.
 */

/** NOTIFY channel; payload `<key hash>:<seq>`, sent on commit. */
export const TAIL_CHANNEL = 'berth_tail';

/** Advisory lock class of publishes, taken with `hashtext(key_hash)` (others: aws-quotas.ts, log-events.ts). */
const LOCK_CLASS_TAIL = 0x62657461;

/** The key hash of the row holding the largest `through` of the trim marks forgotten (no key hashes to ''). */
export const FORGOTTEN_TRIMS = '';

/**
 * $1 key hash, $2 payload (JSON text). The lock is taken in the CTE the insert reads from, so before the identity is
 * drawn; `created_at` defaults to clock_timestamp(), read after it: both follow seq order within a key.
 */
export const PUBLISH = `
  WITH turn AS (SELECT pg_advisory_xact_lock(${LOCK_CLASS_TAIL}, hashtext($1::text))),
  stored AS (INSERT INTO tail_buffer (key_hash, payload) SELECT $1::text, $2::json FROM turn RETURNING seq)
  SELECT seq::text, pg_notify('${TAIL_CHANNEL}', $1::text || ':' || seq) FROM stored`;

/** $1 key hash. */
export const LATEST = `SELECT max(seq)::text AS seq FROM tail_buffer WHERE key_hash = $1::text`;

/**
 * $1 key hash, $2 after this seq, $3 rows at most, $4 bytes (stored size) at most — the first row always comes.
 * One statement, so the trim mark and the rows are of one snapshot: rows at or below the mark are gone, rows above
 * it are all there. Returns one row with null seq when nothing is past $2; `candidates` counts the rows considered
 * (more may follow when it is $3 or when rows were left out for size).
 */
export const READ = `
  SELECT mark.through::text AS through, r.seq::text AS seq, r.payload, r.candidates
  FROM (SELECT coalesce(
      (SELECT through FROM tail_trims WHERE key_hash = $1::text),
      (SELECT through FROM tail_trims WHERE key_hash = '${FORGOTTEN_TRIMS}')) AS through) mark
  LEFT JOIN LATERAL (
    SELECT seq, payload, candidates FROM (
      SELECT seq, payload, count(*) OVER () AS candidates,
        sum(pg_column_size(payload)) OVER (ORDER BY seq) - pg_column_size(payload) AS before
      FROM (SELECT seq, payload FROM tail_buffer WHERE key_hash = $1::text AND seq > $2::bigint
            ORDER BY seq LIMIT $3::int) l
    ) w WHERE before < $4::bigint
  ) r ON true
  ORDER BY r.seq`;

/** $1 key hashes: for each, the newest seq stored or trimmed (null: none). */
export const NEWEST = `
  SELECT k.key_hash, greatest(
      (SELECT max(b.seq) FROM tail_buffer b WHERE b.key_hash = k.key_hash),
      (SELECT t.through FROM tail_trims t WHERE t.key_hash = k.key_hash))::text AS newest
  FROM unnest($1::text[]) AS k(key_hash)`;

/**
 * Appended to a CTE `gone(key_hash, seq)` of deleted rows: raises each key's trim mark. In key order, so two trims
 * lock the marks in the same order (no deadlock).
 */
const MARK_TRIMMED = `
  INSERT INTO tail_trims (key_hash, through)
  SELECT key_hash, max(seq) FROM gone GROUP BY key_hash ORDER BY key_hash
  ON CONFLICT (key_hash) DO UPDATE
    SET through = greatest(tail_trims.through, excluded.through), trimmed_at = now()`;

/** $1 key hashes, $2 rows kept per key: deletes the older ones. */
export const TRIM_ROWS = `
  WITH cut AS (
    SELECT k.key_hash, (SELECT b.seq FROM tail_buffer b WHERE b.key_hash = k.key_hash
                        ORDER BY b.seq DESC OFFSET $2::int LIMIT 1) AS through
    FROM unnest($1::text[]) AS k(key_hash)
  ), gone AS (
    DELETE FROM tail_buffer b USING cut
    WHERE b.key_hash = cut.key_hash AND b.seq <= cut.through
    RETURNING b.key_hash, b.seq
  )${MARK_TRIMMED}`;

/**
 * $1 age in ms, $2 rows at most: deletes rows older than the age, oldest first. Rows another replica's trim holds are
 * skipped, not waited for.
 */
export const TRIM_AGE = `
  WITH old AS (
    SELECT key_hash, seq FROM tail_buffer
    WHERE created_at < now() - $1::int * interval '1 millisecond'
    ORDER BY created_at LIMIT $2::int FOR UPDATE SKIP LOCKED
  ), gone AS (
    DELETE FROM tail_buffer b USING old WHERE b.key_hash = old.key_hash AND b.seq = old.seq
    RETURNING b.key_hash, b.seq
  )${MARK_TRIMMED}`;

/**
 * Forgets the trim marks of keys not trimmed for a day, keeping the largest in the FORGOTTEN_TRIMS row: a key without
 * a mark of its own reads that one, so a cursor older than every forgotten mark is still told of its gap (seqs rise,
 * so a current cursor of any key is above it).
 */
export const FORGET_TRIMS = `
  WITH old AS (
    DELETE FROM tail_trims WHERE key_hash <> '${FORGOTTEN_TRIMS}' AND trimmed_at < now() - interval '1 day'
    RETURNING through
  )
  INSERT INTO tail_trims (key_hash, through)
  SELECT '${FORGOTTEN_TRIMS}', max(through) FROM old HAVING count(*) > 0
  ON CONFLICT (key_hash) DO UPDATE
    SET through = greatest(tail_trims.through, excluded.through), trimmed_at = now()`;
