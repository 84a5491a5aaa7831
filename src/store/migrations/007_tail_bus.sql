-- Live tails shared by the replicas (src/store/log-stream/tail-bus/): one replica holds a key's lease and runs its upstream,
-- publishes what it reads into a short buffer, and every replica with subscribers of the key reads it from there.
-- Keys are stored hashed (sha256, base64url). Used on PostgreSQL only (PGlite is one process: in memory), but created
-- everywhere like every table.

-- What the holders published, for bufferMs (default 60 s) and bufferRows per key (default 10,000); trimmed by the
-- replicas. `seq` is shared by every key, in commit order within a key (publishes of a key take turns on an advisory
-- lock). The payload is json, not jsonb: stored and returned as written, and nothing queries inside it.
CREATE TABLE tail_buffer (
  key_hash text NOT NULL,
  seq bigint GENERATED ALWAYS AS IDENTITY,
  payload json NOT NULL,
  created_at timestamptz NOT NULL DEFAULT clock_timestamp(),
  PRIMARY KEY (key_hash, seq)
);
-- The age trim takes the oldest rows of every key.
CREATE INDEX tail_buffer_created_idx ON tail_buffer (created_at);

-- Per key, the newest seq trimmed: a subscriber whose cursor is below it has missed entries (it is told: a gap).
-- Marks not raised for a day are folded into the row of key_hash '' (the largest forgotten).
CREATE TABLE tail_trims (
  key_hash text PRIMARY KEY,
  through bigint NOT NULL,
  trimmed_at timestamptz NOT NULL DEFAULT now()
);

-- Who runs a key's upstream. Taken when absent or expired (by the database's clock), renewed by its holder every
-- ttl/3 while `token` still matches; a holder that dies frees the key when `expires_at` passes.
CREATE TABLE tail_leases (
  key_hash text PRIMARY KEY,
  holder text NOT NULL,
  token text NOT NULL,
  expires_at timestamptz NOT NULL
);
