// Migration 4: every change to lakehouse_partitions notifies the orrery_partitions channel with
// the view set's name (delivered at commit, once per view set and transaction), so servers keep
// partition lists between statements and drop them when any process changes them (ChangeFeed).

export const partitionNotifications = `
CREATE FUNCTION orrery_notify_partitions() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP IN ('UPDATE', 'DELETE') THEN PERFORM pg_notify('orrery_partitions', OLD.view_set_name); END IF;
  IF TG_OP IN ('UPDATE', 'INSERT') THEN PERFORM pg_notify('orrery_partitions', NEW.view_set_name); END IF;
  RETURN NULL;
END $$;
CREATE TRIGGER lakehouse_partitions_notify AFTER INSERT OR UPDATE OR DELETE ON lakehouse_partitions
  FOR EACH ROW EXECUTE FUNCTION orrery_notify_partitions();
CREATE FUNCTION orrery_notify_partitions_truncated() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify('orrery_partitions', '*');
  RETURN NULL;
END $$;
CREATE TRIGGER lakehouse_partitions_truncate_notify AFTER TRUNCATE ON lakehouse_partitions
  FOR EACH STATEMENT EXECUTE FUNCTION orrery_notify_partitions_truncated();
`;
