-- The split presence rows of a campaign, found without reading its other
-- rows: a player's search leaves out the chunks of split scenes they may
-- not read (memory/postgres knowledge.go's deniedCTEs), computed from
-- these rows on every search, so what it costs follows the campaign's
-- split scenes, not its sessions. Most campaigns have none or few, and the
-- index is as small.
CREATE INDEX session_presence_split ON session_presence (campaign_id, session_id, at) WHERE split;
