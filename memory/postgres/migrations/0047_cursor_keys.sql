-- A campaign's cursor_key is a random secret the MCP server keys a
-- player's sync cursor with (memory/mcpserver's cursor.go): a player's
-- cursor is a keyed permutation of a position in the change log, not the
-- position, whose steps would count the changes the player may not see.
-- It never leaves the server. 244 random bits from two random UUIDs
-- (gen_random_uuid draws from a strong source); every campaign gets its
-- own.
ALTER TABLE campaigns ADD COLUMN cursor_key bytea NOT NULL
    DEFAULT decode(replace(gen_random_uuid()::text || gen_random_uuid()::text, '-', ''), 'hex');
