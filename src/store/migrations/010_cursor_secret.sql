-- The key that seals domain-list and API-key-list cursors when CURSOR_SECRET is unset (issue 20): generated at random
-- by the first replica to start, kept here so every replica and every restart seals and opens the same cursors. One
-- row at most (`id` can only be true); replicas starting together insert theirs with ON CONFLICT DO NOTHING and all
-- read back the one that won (src/store/repositories/cursor-secret.ts). Deleting the row rotates the key at the
-- next start of every replica; cursors issued before then answer 400.
CREATE TABLE cursor_secret (
  id boolean PRIMARY KEY DEFAULT true CHECK (id),
  secret text NOT NULL CHECK (length(secret) >= 32),
  created_at timestamptz NOT NULL DEFAULT now()
);
