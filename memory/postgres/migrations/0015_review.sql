-- Review (issue 30): when and why a fact left canon, and batches of review
-- decisions the DM can undo.

-- When a fact was retired and why ("superseded by fact 12, confirmed by the
-- DM"). "As of" a date reads retired_at; a fact retired before this
-- migration gets its last update time, the best record there is.
ALTER TABLE relationships ADD COLUMN retired_at timestamptz;
ALTER TABLE relationships ADD COLUMN retire_reason text NOT NULL DEFAULT '';
ALTER TABLE relationships DISABLE TRIGGER relationships_log;
UPDATE relationships SET retired_at = updated_at WHERE status = 'retired';
ALTER TABLE relationships ENABLE TRIGGER relationships_log;

-- One bulk confirm or reject: the rows it touched as they were before
-- (relationships, fact_conflicts, fact_links and fact_evidence as jsonb)
-- and each touched fact's updated_at after it, so undo restores the
-- previous states only if nothing changed them since.
CREATE TABLE review_batches (
    id          bigserial PRIMARY KEY,
    campaign_id text NOT NULL REFERENCES campaigns (id) ON DELETE CASCADE,
    action      text NOT NULL CHECK (action IN ('confirm', 'reject')),
    actor       text NOT NULL DEFAULT '',
    facts       bigint[] NOT NULL,
    before      jsonb NOT NULL,
    after       jsonb NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now(),
    undone_at   timestamptz
);
CREATE INDEX review_batches_campaign ON review_batches (campaign_id, id);
