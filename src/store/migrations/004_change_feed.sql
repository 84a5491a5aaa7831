-- Change feed for in-process caches (src/store/change-feed.ts): every statement that writes a table a cache
-- reads notifies channel `berth_changes` with the table's name, whoever runs it (the API, `berth seed`,
-- `berth token`, a person with psql). PostgreSQL delivers a notification on commit, once per distinct payload
-- in a transaction, and never for a rolled-back one; a fixture reload is one notification per table.
-- Statement-level, so a bulk write costs one notification, and TRUNCATE is covered. Cascaded deletes run as
-- statements on the child tables, so they notify too.

CREATE FUNCTION berth_notify_change() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify('berth_changes', TG_TABLE_NAME);
  RETURN NULL;
END;
$$;

-- Authentication (keys, principals, memberships), identity providers (organizations), and the tables that
-- decide which organization owns an id (tenancy).
CREATE TRIGGER api_keys_changed AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON api_keys
  FOR EACH STATEMENT EXECUTE FUNCTION berth_notify_change();
CREATE TRIGGER principals_changed AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON principals
  FOR EACH STATEMENT EXECUTE FUNCTION berth_notify_change();
CREATE TRIGGER memberships_changed AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON memberships
  FOR EACH STATEMENT EXECUTE FUNCTION berth_notify_change();
CREATE TRIGGER organizations_changed AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON organizations
  FOR EACH STATEMENT EXECUTE FUNCTION berth_notify_change();
CREATE TRIGGER projects_changed AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON projects
  FOR EACH STATEMENT EXECUTE FUNCTION berth_notify_change();
CREATE TRIGGER environments_changed AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON environments
  FOR EACH STATEMENT EXECUTE FUNCTION berth_notify_change();
CREATE TRIGGER module_instances_changed AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON module_instances
  FOR EACH STATEMENT EXECUTE FUNCTION berth_notify_change();
CREATE TRIGGER cloud_accounts_changed AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON cloud_accounts
  FOR EACH STATEMENT EXECUTE FUNCTION berth_notify_change();
CREATE TRIGGER log_sources_changed AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON log_sources
  FOR EACH STATEMENT EXECUTE FUNCTION berth_notify_change();
CREATE TRIGGER deployment_resources_changed AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON deployment_resources
  FOR EACH STATEMENT EXECUTE FUNCTION berth_notify_change();
CREATE TRIGGER certificates_changed AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON certificates
  FOR EACH STATEMENT EXECUTE FUNCTION berth_notify_change();
CREATE TRIGGER domains_changed AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON domains
  FOR EACH STATEMENT EXECUTE FUNCTION berth_notify_change();
