// Migration 11: ingestion's insert of a commit group's rows as one function call (src/ingestion/ingestion-service.ts,
// insertRows). The statement it replaces inserted the group's processes and streams every time (ON CONFLICT DO
// NOTHING), and Postgres spent two thirds of its time on those two inserts (opening their tables and indexes for
// the statement) although nearly every group names processes and streams that exist: ~0.19 against ~0.07 ms of
// Postgres CPU for a group of one block. The function inserts them only when one is missing, checked after the lock
// on `blocks` that retention waits for (see the daemon's housekeeping): a process or stream that retention deletes is
// either deleted before the check (which then sees it gone and inserts it again) or not at all (retention's delete,
// which waits for the lock, then sees this group's block naming it). Rows go in the order of before (processes,
// streams, blocks), so a server of the version before, inserting beside it, waits rather than deadlocks.

export const insertBlocks = `
CREATE FUNCTION orrery_insert_blocks(
  process_ids uuid[], exes text[], usernames text[], realnames text[], computers text[], distros text[],
  cpu_brands text[], process_properties jsonb[], process_audiences text[],
  stream_ids uuid[], stream_processes uuid[], stream_tag text, stream_format text,
  block_ids uuid[], block_streams uuid[], block_processes uuid[], begin_times timestamptz[], end_times timestamptz[],
  counts int[], payload_files text[], object_offsets bigint[], payload_sizes bigint[], block_audiences text[],
  deferred boolean)
RETURNS uuid[] LANGUAGE plpgsql AS $$
DECLARE
  inserted uuid[];
BEGIN
  IF deferred THEN
    PERFORM set_config('synchronous_commit', 'off', true);
  END IF;
  LOCK TABLE blocks IN ROW EXCLUSIVE MODE;
  IF EXISTS (SELECT 1 FROM unnest(process_ids) AS t (id)
              WHERE NOT EXISTS (SELECT 1 FROM processes p WHERE p.process_id = t.id)) THEN
    INSERT INTO processes (process_id, exe, username, realname, computer, distro, cpu_brand, start_time, properties, audience)
    SELECT id, exe, username, realname, computer, distro, cpu_brand, now(), properties, audience
      FROM unnest(process_ids, exes, usernames, realnames, computers, distros, cpu_brands, process_properties,
                  process_audiences)
           AS t (id, exe, username, realname, computer, distro, cpu_brand, properties, audience)
    ON CONFLICT (process_id) DO NOTHING;
  END IF;
  IF EXISTS (SELECT 1 FROM unnest(stream_ids) AS t (id)
              WHERE NOT EXISTS (SELECT 1 FROM streams s WHERE s.stream_id = t.id)) THEN
    INSERT INTO streams (stream_id, process_id, tags, properties, format)
    SELECT id, process_id, ARRAY[stream_tag], '{}', stream_format FROM unnest(stream_ids, stream_processes) AS t (id, process_id)
    ON CONFLICT (stream_id) DO NOTHING;
  END IF;
  WITH b AS (
    INSERT INTO blocks (block_id, stream_id, process_id, begin_time, begin_ticks, end_time, end_ticks, nb_objects,
                        payload_file, object_offset, payload_size, audience)
    SELECT id, stream_id, process_id, begin_time, 0, end_time, 0, nb_objects, payload_file, object_offset, payload_size,
           audience
      FROM unnest(block_ids, block_streams, block_processes, begin_times, end_times, counts, payload_files,
                  object_offsets, payload_sizes, block_audiences)
           AS t (id, stream_id, process_id, begin_time, end_time, nb_objects, payload_file, object_offset, payload_size,
                 audience)
    ON CONFLICT (block_id) DO NOTHING
    RETURNING block_id)
  SELECT coalesce(array_agg(block_id), '{}') INTO inserted FROM b;
  RETURN inserted;
END
$$;
`;
