-- A search of entities by part of a name or alias (Graph.FindEntities'
-- Name: the Discord autocomplete on every keystroke, the console's entity
-- search, `/memory entity show`, MCP read_graph) read every entity of the
-- campaign: 0.14 s at the 100k bench scale. A trigram index over an
-- entity's name and aliases, in lower case one per line, finds the
-- candidates; the search still checks name and each alias exactly, so a
-- term spanning two of them is not a match.
CREATE EXTENSION IF NOT EXISTS pg_trgm;

-- glyphoxa_entity_words is what a name search looks in: the name and the
-- aliases, lower case, one per line (array_to_string is stable only
-- because it takes any array; for text[] it is immutable).
CREATE FUNCTION glyphoxa_entity_words(name text, aliases text[]) RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT lower(name) || E'\n' || lower(array_to_string(aliases, E'\n'))
$$;

CREATE INDEX entities_words ON entities USING gin (campaign_id, glyphoxa_entity_words(name, aliases) gin_trgm_ops);
