-- Live continuity cards (lifecycle/continuity): a line at the table that
-- contradicts canon, raised for the DM. Stored so that a card survives a
-- restart of the process that raised it and can be shown and settled by
-- any process on the database (the console's Live page, Discord buttons).
-- A card is settled exactly once: the settlement is a conditional UPDATE
-- (settled_at IS NULL) in the transaction that makes its writes.
CREATE TABLE continuity_cards (
    campaign_id   text NOT NULL REFERENCES campaigns (id) ON DELETE CASCADE,
    id            text NOT NULL CHECK (id <> ''),
    session_id    text NOT NULL DEFAULT '',
    speaker_id    text NOT NULL DEFAULT '',
    line_key      text NOT NULL DEFAULT '',
    line_text     text NOT NULL DEFAULT '',
    canon_fact_id bigint NOT NULL DEFAULT 0,
    canon_text    text NOT NULL DEFAULT '',
    kind          text NOT NULL,
    -- card is the whole card as the continuity package encodes it.
    card          jsonb NOT NULL,
    created_at    timestamptz NOT NULL,
    settled_at    timestamptz,
    settled_by    text NOT NULL DEFAULT '',
    outcome       text NOT NULL DEFAULT '',
    PRIMARY KEY (campaign_id, id)
);

CREATE INDEX continuity_cards_recent ON continuity_cards (campaign_id, created_at DESC);
CREATE INDEX continuity_cards_speaker ON continuity_cards (campaign_id, speaker_id);
