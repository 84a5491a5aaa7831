-- Ingest that cannot hurt others (issue 11): a quota of stored events per organization, a retention window,
-- and idempotency keys on the ingest route. See docs/decisions.md, "Ingest limits".

-- When Berth stored the row, by the database's clock: what the retention window counts from. Not `ingestion_time`:
-- that is the event's own attribute, which fixtures set in the past (their timestamps by default), and a fixture
-- loaded today must not be swept at once. Existing rows get this migration's time (a stable default: no rewrite).
ALTER TABLE log_events
  ADD COLUMN stored_at bigint NOT NULL DEFAULT (extract(epoch FROM now()) * 1000)::bigint;

-- A quota makes room by deleting an organization's oldest events (by timestamp, then event id): an ordered scan per
-- account. Narrower than the group index (no region, group or event id): ties on a timestamp are sorted in memory.
CREATE INDEX log_events_account_time_idx ON log_events (cloud_account_id, timestamp, event_id);

-- Stored events per account, so a quota check is a sum over one organization's accounts, not count(*) over its
-- million rows. Kept by statement triggers on log_events, whoever writes (the API, `berth seed`, tests, psql,
-- cascades). A trigger appends a change row instead of updating the account's total: a counter row updated by
-- every insert would hold each writer of the account until the previous one commits (a fixture loading for a
-- minute would stall every ingest into its accounts). The sweep folds changes into the totals; the stored count
-- of an account is its total plus its changes.
CREATE TABLE log_event_counts (
  cloud_account_id text PRIMARY KEY REFERENCES cloud_accounts(id) ON DELETE CASCADE,
  events bigint NOT NULL
);
CREATE TABLE log_event_count_changes (
  seq bigserial PRIMARY KEY,
  cloud_account_id text NOT NULL REFERENCES cloud_accounts(id) ON DELETE CASCADE,
  events bigint NOT NULL
);
CREATE INDEX log_event_count_changes_account_idx ON log_event_count_changes (cloud_account_id);
INSERT INTO log_event_counts (cloud_account_id, events)
  SELECT cloud_account_id, count(*) FROM log_events GROUP BY cloud_account_id;
-- An organization's accounts, for its quota (cloud_accounts had no index on its owner).
CREATE INDEX IF NOT EXISTS cloud_accounts_organization_idx ON cloud_accounts (organization_id);

CREATE FUNCTION berth_count_inserted_events() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO log_event_count_changes (cloud_account_id, events)
    SELECT cloud_account_id, count(*) FROM inserted_events GROUP BY cloud_account_id;
  RETURN NULL;
END;
$$;

-- Events deleted with their account (a cascade) are not counted: the account's counts go with it.
CREATE FUNCTION berth_count_deleted_events() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO log_event_count_changes (cloud_account_id, events)
    SELECT cloud_account_id, -count(*) FROM deleted_events
    WHERE cloud_account_id IN (SELECT id FROM cloud_accounts) GROUP BY cloud_account_id;
  RETURN NULL;
END;
$$;

-- Nothing in Berth moves an event to another account; a person with psql might.
CREATE FUNCTION berth_count_moved_events() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO log_event_count_changes (cloud_account_id, events)
    SELECT cloud_account_id, sum(n) FROM (
      SELECT cloud_account_id, count(*) AS n FROM inserted_events GROUP BY cloud_account_id
      UNION ALL
      SELECT cloud_account_id, -count(*) FROM deleted_events GROUP BY cloud_account_id
    ) m WHERE cloud_account_id IN (SELECT id FROM cloud_accounts) GROUP BY cloud_account_id HAVING sum(n) <> 0;
  RETURN NULL;
END;
$$;

CREATE FUNCTION berth_count_truncated_events() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  DELETE FROM log_event_count_changes;
  DELETE FROM log_event_counts;
  RETURN NULL;
END;
$$;

CREATE TRIGGER log_events_counted_insert AFTER INSERT ON log_events
  REFERENCING NEW TABLE AS inserted_events FOR EACH STATEMENT EXECUTE FUNCTION berth_count_inserted_events();
CREATE TRIGGER log_events_counted_delete AFTER DELETE ON log_events
  REFERENCING OLD TABLE AS deleted_events FOR EACH STATEMENT EXECUTE FUNCTION berth_count_deleted_events();
CREATE TRIGGER log_events_counted_update AFTER UPDATE ON log_events
  REFERENCING OLD TABLE AS deleted_events NEW TABLE AS inserted_events
  FOR EACH STATEMENT EXECUTE FUNCTION berth_count_moved_events();
CREATE TRIGGER log_events_counted_truncate AFTER TRUNCATE ON log_events
  FOR EACH STATEMENT EXECUTE FUNCTION berth_count_truncated_events();

-- Idempotency keys of the ingest route, per organization (two tenants' equal keys are two rows). A request claims
-- its key by inserting the row (`claim_id`: its own id; `locked_until`: the claim's lease); it is marked done with
-- its answer (`accepted`) when every event is stored. `received_at` is the first attempt's time: a retry after a
-- failure mid-way gives events without a timestamp that same time, so their event ids are the same and what was
-- stored already is skipped.
CREATE TABLE ingest_idempotency_keys (
  organization_id text NOT NULL REFERENCES organizations(id) ON DELETE CASCADE,
  key text NOT NULL,
  request_hash text NOT NULL,
  received_at bigint NOT NULL,
  claim_id text NOT NULL,
  accepted integer,
  locked_until timestamptz NOT NULL,
  expires_at timestamptz NOT NULL,
  PRIMARY KEY (organization_id, key)
);
CREATE INDEX ingest_idempotency_keys_expires_idx ON ingest_idempotency_keys (expires_at);
