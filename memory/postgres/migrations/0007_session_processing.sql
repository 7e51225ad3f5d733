-- Post-session processing: how far the background processing of each
-- session has got, stage by stage, so that it resumes after a crash instead
-- of starting over.
CREATE TABLE session_processing (
    campaign_id text NOT NULL,
    session_id  text NOT NULL,
    stage       text NOT NULL CHECK (stage <> ''),
    position    integer NOT NULL DEFAULT 0 CHECK (position >= 0),
    done        boolean NOT NULL DEFAULT false,
    updated_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (campaign_id, session_id, stage),
    FOREIGN KEY (campaign_id, session_id) REFERENCES sessions (campaign_id, id) ON DELETE CASCADE
);
