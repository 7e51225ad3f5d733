-- Privacy and provenance of derived data.

-- Players who asked not to be transcribed or stored, per campaign.
CREATE TABLE privacy_optouts (
    campaign_id  text NOT NULL REFERENCES campaigns (id) ON DELETE CASCADE,
    user_id      text NOT NULL,
    opted_out_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (campaign_id, user_id)
);

-- The transcript lines a fact was extracted from, so that deleting a
-- player's lines can delete the facts that rest on them alone.
CREATE TABLE fact_evidence (
    fact_id     bigint NOT NULL REFERENCES relationships (id) ON DELETE CASCADE,
    entry_id    bigint NOT NULL REFERENCES transcript_entries (id) ON DELETE CASCADE,
    PRIMARY KEY (fact_id, entry_id)
);
CREATE INDEX fact_evidence_entry ON fact_evidence (entry_id);

-- Lines the DM declared non-canon ("that never happened"): kept for the
-- record, left out of recall, recaps and processing.
ALTER TABLE transcript_entries ADD COLUMN noncanon boolean NOT NULL DEFAULT false;
