-- Live tails of `local` accounts learn of new events at once instead of at their next poll: every statement
-- that inserts log events notifies the change feed's channel (src/store/change-feed.ts) once per cloud account
-- it wrote to, with the payload `log_events:<account id>`, on commit (never for a rolled-back one). The
-- in-process caches ignore it (no cache reads that name); the log stream service wakes that account's tails.
CREATE FUNCTION berth_notify_log_events() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify('berth_changes', 'log_events:' || account_id)
    FROM (SELECT DISTINCT cloud_account_id AS account_id FROM inserted) AS accounts;
  RETURN NULL;
END;
$$;

CREATE TRIGGER log_events_inserted AFTER INSERT ON log_events
  REFERENCING NEW TABLE AS inserted
  FOR EACH STATEMENT EXECUTE FUNCTION berth_notify_log_events();
