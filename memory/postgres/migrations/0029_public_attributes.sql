-- An entity's public attributes, computed once when it is written instead
-- of on every read: public_attributes is glyphoxa_public_attributes
-- (migration 0010) of the attributes when their text may hold a secret,
-- and NULL when it cannot (most entities hold none), so a reader takes
-- coalesce(public_attributes, attributes) (memory/postgres/viewer.go's
-- publicAttrs).
--
-- The test for "may hold a secret" is the one reads took until now: the
-- text of the attributes has a double quote followed by the start of a
-- secret key (secretKeyStarts in viewer.go, ASCII case-insensitively);
-- jsonb's text escapes no character of those starts, so attributes without
-- such a match hold no secret key and no "secret" marker at any depth.
-- TestPublicAttrsShortcut checks the column against the function and
-- against the Go definition.
--
-- A stored generated column is recomputed by PostgreSQL on every INSERT,
-- UPDATE and COPY, whatever writes the row (the store's upserts and
-- merges, imports, the console, MCP, a hand-written UPDATE), so it cannot
-- fall behind the attributes. It depends on the definition of a secret:
-- a migration that changes glyphoxa_public or secretKeyStarts must drop
-- and re-add this column.
ALTER TABLE entities ADD COLUMN public_attributes jsonb GENERATED ALWAYS AS (
    CASE WHEN attributes::text ~* '"(secret|gm_|dm_|hidden|known_by|notes_)'
         THEN glyphoxa_public_attributes(attributes) END) STORED;
