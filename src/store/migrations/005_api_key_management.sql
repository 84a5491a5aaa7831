-- Key management through the API (issue 10): a label, who made a key and who revoked it. Keys from
-- `berth token` and fixtures have neither (NULL). A principal's deletion keeps the record of what it did.
ALTER TABLE api_keys
  ADD COLUMN name text,
  ADD COLUMN created_by text REFERENCES principals(id) ON DELETE SET NULL,
  ADD COLUMN revoked_by text REFERENCES principals(id) ON DELETE SET NULL;

-- An organization's keys are listed newest first, a page at a time: one index range per page.
CREATE INDEX api_keys_organization_created_idx ON api_keys (organization_id, created_at DESC, id DESC);
