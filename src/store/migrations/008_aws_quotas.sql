-- AWS quotas held for the whole cluster (docs/design.md#aws-facts and #scale): every replica draws on the same
-- rows, keyed by strings the caller composes from the AWS account id and region (several Berth cloud accounts may
-- be one AWS account).
-- See src/store/aws-quotas.ts.

-- An evenly spaced request rate (FilterLogEvents): `next_at` is the earliest time, by the database's clock, the next
-- call of the key may start. One row per key, moved forward by every call; nothing to sweep.
CREATE TABLE aws_rate_slots (
  key text PRIMARY KEY,
  next_at timestamptz NOT NULL
);

-- Concurrent slots (Logs Insights queries, Live Tail sessions): one row per slot held, renewed by its holder while
-- it runs. A row past `expires_at` holds nothing (its holder died or lost the database) and is deleted by the next
-- acquisition of the key.
CREATE TABLE aws_quota_leases (
  key text NOT NULL,
  lease_id text NOT NULL,
  expires_at timestamptz NOT NULL,
  PRIMARY KEY (key, lease_id)
);
