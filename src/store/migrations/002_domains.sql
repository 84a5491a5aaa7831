-- Domains and certificates (issue 3).

-- The name minus its first label: `a.b.example.com` and `*.b.example.com` → `b.example.com`.
-- Name availability asks "which names sit one label under x?" (a wildcard `*.x` covers exactly
-- those); with this column that is one index lookup instead of a `LIKE '%.x'` scan. Generated, so
-- every writer (fixtures, future APIs) keeps it right without knowing about it.
ALTER TABLE domains
  ADD COLUMN parent_name text GENERATED ALWAYS AS (substr(domain_name, strpos(domain_name, '.') + 1)) STORED;
CREATE INDEX domains_parent_name_idx ON domains (parent_name);

-- Paging order is bytewise (C collation) whatever the database's default collation, so the order
-- is the same on every PostgreSQL and on PGlite, and the keyset comparison matches the index.
DROP INDEX domains_instance_name_idx;
CREATE INDEX domains_instance_name_idx
  ON domains (module_instance_id, (domain_name COLLATE "C"), (id COLLATE "C"));

-- The domains a certificate serves (the retry publishes validation records for managed ones).
CREATE INDEX domains_certificate_idx ON domains (certificate_id);

-- A validation retry claims the certificate with a lease for the time of its DNS and provider
-- calls, so concurrent retries on any replica coalesce into one attempt without holding a lock
-- or a connection across network I/O. `validation_attempts` counts finished attempts.
ALTER TABLE certificates
  ADD COLUMN validation_attempt_id text,
  ADD COLUMN validation_attempt_expires_at timestamptz,
  ADD COLUMN validation_attempts integer NOT NULL DEFAULT 0,
  ADD COLUMN last_validation_attempt_at timestamptz;
