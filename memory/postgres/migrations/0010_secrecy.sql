-- One definition of what is secret, for every read path (memory/viewer.go
-- is its Go twin; TestSecrecyAgreesWithGo keeps them in step).
--
-- An attribute is secret when its key, ASCII letters lower-cased, is one of
-- known_by, gm_notes, dm_notes, notes_gm, notes_dm or starts with secret,
-- gm_, dm_ or hidden; or when its value is an object holding
-- "secret": true. A relationship is secret when its attributes hold
-- "secret": true.

CREATE FUNCTION glyphoxa_secret_key(k text) RETURNS boolean
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
    SELECT x IN ('known_by', 'gm_notes', 'dm_notes', 'notes_gm', 'notes_dm')
        OR starts_with(x, 'secret') OR starts_with(x, 'gm_') OR starts_with(x, 'dm_') OR starts_with(x, 'hidden')
    FROM (SELECT translate(k, 'ABCDEFGHIJKLMNOPQRSTUVWXYZ', 'abcdefghijklmnopqrstuvwxyz') AS x) t
$$;

-- glyphoxa_public is v without what is secret, at any depth; SQL NULL for a
-- value that is secret as a whole (an object marked "secret": true).
CREATE FUNCTION glyphoxa_public(v jsonb) RETURNS jsonb
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE AS $$
DECLARE
    out jsonb;
    k text;
    x jsonb;
    p jsonb;
BEGIN
    IF v IS NULL THEN
        RETURN NULL;
    END IF;
    CASE jsonb_typeof(v)
    WHEN 'object' THEN
        IF v->'secret' = 'true'::jsonb THEN
            RETURN NULL;
        END IF;
        out := '{}'::jsonb;
        FOR k, x IN SELECT * FROM jsonb_each(v) LOOP
            CONTINUE WHEN glyphoxa_secret_key(k);
            p := glyphoxa_public(x);
            CONTINUE WHEN p IS NULL;
            out := out || jsonb_build_object(k, p);
        END LOOP;
        RETURN out;
    WHEN 'array' THEN
        out := '[]'::jsonb;
        FOR x IN SELECT * FROM jsonb_array_elements(v) LOOP
            p := glyphoxa_public(x);
            CONTINUE WHEN p IS NULL;
            out := out || jsonb_build_array(p);
        END LOOP;
        RETURN out;
    ELSE
        RETURN v;
    END CASE;
END
$$;

-- glyphoxa_public_attributes is an attribute object without its secrets;
-- never NULL.
CREATE FUNCTION glyphoxa_public_attributes(v jsonb) RETURNS jsonb
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT coalesce(glyphoxa_public(v), '{}'::jsonb)
$$;

-- Before this migration, "secret" could hold any JSON value and only true
-- hid a fact. Values meant as yes ("true", "yes", 1, …) become true; the
-- clear no's become false; anything else becomes true (when in doubt,
-- hide). A JSON null is no secret.
UPDATE relationships SET attributes = jsonb_set(attributes, '{secret}',
    CASE WHEN attributes->'secret' = 'null'::jsonb OR lower(attributes->>'secret') IN ('false', 'no', 'off', '0', '') THEN 'false'::jsonb ELSE 'true'::jsonb END)
WHERE attributes ? 'secret' AND jsonb_typeof(attributes->'secret') <> 'boolean';
