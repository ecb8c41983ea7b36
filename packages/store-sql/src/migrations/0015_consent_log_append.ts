import { migration, only, raw } from "../Ddl.js"

/**
 * PostgreSQL appends a consent log entry through a function: every consent write calls it once,
 * and a call is planned once per connection, where the statement it replaces (an update of the
 * chain's head and an insert of the entry from what it returned) was parsed and planned on every
 * write. It also makes a chain's head row when the chain has none, so a first entry is one call
 * too. The hash is the same formula the store's `link` computes: SHA-256 of the previous hash,
 * the entry's position and its text, each on a line. Heads are updated in place far more often
 * than they are read: room on their pages lets PostgreSQL rewrite a head without its index.
 */
export default migration([
  only("pg", [
    raw(
      `CREATE FUNCTION consent_log_append(p_organization_id TEXT, p_shard INTEGER, p_changes TEXT, p_at TIMESTAMPTZ)
  RETURNS TABLE (seq BIGINT, hash TEXT) LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
  moved RECORD;
BEGIN
  FOR attempt IN 1..2 LOOP
    UPDATE consent_log_heads AS h
      SET seq = h.seq + 1,
          hash = encode(sha256(convert_to(h.hash || E'\\n' || (h.seq + 1)::text || E'\\n' || p_changes, 'UTF8')), 'hex'),
          created_at = p_at
      WHERE h.organization_id = p_organization_id AND h.shard = p_shard
      RETURNING h.seq, h.hash INTO moved;
    IF FOUND THEN
      INSERT INTO consent_log (organization_id, shard, seq, created_at, changes, hash)
        VALUES (p_organization_id, p_shard, moved.seq, p_at, p_changes, moved.hash);
      seq := moved.seq;
      hash := moved.hash;
      RETURN NEXT;
      RETURN;
    END IF;
    INSERT INTO consent_log_heads (organization_id, shard, seq, hash, changes, created_at)
      VALUES (p_organization_id, p_shard, 0, '', '', p_at) ON CONFLICT DO NOTHING;
  END LOOP;
  RAISE EXCEPTION 'consent log chain % of % has no head', p_shard, p_organization_id;
END
$$`,
      "ALTER TABLE consent_log_heads SET (fillfactor = 50)"
    )
  ])
])
