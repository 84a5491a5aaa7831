-- Sign-in (issue 23, docs/decisions.md "People sign in, programs use keys"). A principal may have an email and a
-- password (an scrypt hash, never the password), and identities at OpenID Connect issuers. People sign in into
-- server-side sessions; the cookie carries a random id of which only the SHA-256 is kept here.

ALTER TABLE principals
  ADD COLUMN email text,
  ADD COLUMN password_hash text;
-- One principal per email, compared without case (the password sign-in looks it up that way).
CREATE UNIQUE INDEX principals_email_key ON principals (lower(email));

-- An identity is (provider, issuer, subject): the same subject at another issuer is another person.
CREATE TABLE identities (
  id text PRIMARY KEY,
  principal_id text NOT NULL REFERENCES principals(id) ON DELETE CASCADE,
  provider text NOT NULL,
  issuer text NOT NULL,
  subject text NOT NULL,
  email text,
  created_at timestamptz NOT NULL DEFAULT now(),
  UNIQUE (provider, issuer, subject)
);
CREATE INDEX identities_principal ON identities (principal_id);

-- A session lasts until expires_at (absolute) and lapses once idle for the configured time since last_seen_at,
-- which is written at most once a minute per session. identity_id is the identity it was made with (NULL for the
-- password): unlinking that identity ends it (ON DELETE CASCADE).
CREATE TABLE sessions (
  id_hash text PRIMARY KEY,
  principal_id text NOT NULL REFERENCES principals(id) ON DELETE CASCADE,
  provider text NOT NULL,
  identity_id text REFERENCES identities(id) ON DELETE CASCADE,
  created_at timestamptz NOT NULL DEFAULT now(),
  expires_at timestamptz NOT NULL,
  last_seen_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX sessions_principal ON sessions (principal_id);
CREATE INDEX sessions_expires ON sessions (expires_at);

-- A sign-in on its way through an issuer: the PKCE verifier, state and nonce, found by the SHA-256 of the random
-- id in the browser's short-lived sign-in cookie, used once (deleted by the callback) and kept ten minutes at most.
CREATE TABLE sign_in_attempts (
  id_hash text PRIMARY KEY,
  provider text NOT NULL,
  state text NOT NULL,
  nonce text NOT NULL,
  code_verifier text NOT NULL,
  return_to text NOT NULL,
  organization_id text,
  expires_at timestamptz NOT NULL
);
CREATE INDEX sign_in_attempts_expires ON sign_in_attempts (expires_at);

-- Caches of sessions hear of their end on every replica: a delete (sign-out, unlink, a password change) notifies.
-- Inserts and the last_seen_at touch do not: a new session id cannot be cached as missing (nobody could know it),
-- and a touch must not flush every replica's cache once a minute per session.
CREATE TRIGGER sessions_ended AFTER DELETE OR TRUNCATE ON sessions
  FOR EACH STATEMENT EXECUTE FUNCTION berth_notify_change();
CREATE TRIGGER identities_changed AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON identities
  FOR EACH STATEMENT EXECUTE FUNCTION berth_notify_change();
