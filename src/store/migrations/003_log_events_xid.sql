-- The transaction that wrote each log event, for the live tail's position (docs/decisions.md, "Log stream").
-- `seq` is taken when a row is inserted but becomes visible when its transaction commits, so a long
-- transaction commits rows below positions a tail has passed. A transaction's id and the in-progress list of a
-- snapshot (`pg_current_snapshot()`) tell exactly which rows may still appear: the tail cursor is built on them.
-- Rows written before this migration get this migration's transaction id (the default is STABLE: evaluated once,
-- no table rewrite); they are all committed, so they read as one old transaction. Each insert gets its own
-- transaction's id. xid8 (64-bit, epoch-extended) never wraps around.
ALTER TABLE log_events ADD COLUMN xid xid8 NOT NULL DEFAULT pg_current_xact_id();
CREATE INDEX log_events_xid_seq_idx ON log_events (xid, seq);
