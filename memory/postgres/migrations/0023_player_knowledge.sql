-- Per-player knowledge: who plays whom, who was present when a line was
-- said, and what the DM granted a player (handouts, whispers).

-- A Discord member's character in a campaign (campaign file `players:`,
-- `/session player`). One character per member.
CREATE TABLE player_characters (
    campaign_id text NOT NULL REFERENCES campaigns (id) ON DELETE CASCADE,
    user_id     text NOT NULL CHECK (user_id <> ''),
    entity_id   text NOT NULL,
    updated_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (campaign_id, user_id),
    FOREIGN KEY (campaign_id, entity_id) REFERENCES entities (campaign_id, id) ON DELETE CASCADE
);

-- Presence as spans: each row says which players were present (in the
-- voice channel and, while the DM split the party, in the scene) from `at`
-- until the session's next row. A line said at t was witnessed by the
-- players of the last row at or before t. Rows are written through the
-- session log's outage spool, in order with the lines.
CREATE TABLE session_presence (
    campaign_id text NOT NULL,
    session_id  text NOT NULL,
    at          timestamptz NOT NULL,
    players     text[] NOT NULL DEFAULT '{}',
    PRIMARY KEY (campaign_id, session_id, at),
    FOREIGN KEY (campaign_id, session_id) REFERENCES sessions (campaign_id, id) ON DELETE CASCADE
);

-- What the DM granted one player: a handout or whisper (text), or a fact
-- the player's character now knows. Read by that player and the DM only.
CREATE TABLE player_grants (
    id          bigserial PRIMARY KEY,
    campaign_id text NOT NULL REFERENCES campaigns (id) ON DELETE CASCADE,
    user_id     text NOT NULL CHECK (user_id <> ''),
    text        text NOT NULL DEFAULT '',
    fact_id     bigint REFERENCES relationships (id) ON DELETE CASCADE,
    session_id  text NOT NULL DEFAULT '',
    granted_at  timestamptz NOT NULL DEFAULT now(),
    CHECK (text <> '' OR fact_id IS NOT NULL)
);
CREATE INDEX player_grants_user ON player_grants (campaign_id, user_id, granted_at);
