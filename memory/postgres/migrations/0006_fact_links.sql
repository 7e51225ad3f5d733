-- Facts over time: typed links between facts, and the conflicts between a
-- new fact and a canon one that wait for the DM.

-- How two facts relate: the newer supersedes or contradicts the older, one
-- supports, relates to, is derived from or is similar to another.
CREATE TABLE fact_links (
    campaign_id text NOT NULL REFERENCES campaigns (id) ON DELETE CASCADE,
    from_fact   bigint NOT NULL REFERENCES relationships (id) ON DELETE CASCADE,
    to_fact     bigint NOT NULL REFERENCES relationships (id) ON DELETE CASCADE,
    kind        text NOT NULL CHECK (kind IN ('supersedes', 'supports', 'contradicts', 'relates_to', 'derived_from', 'similar_to')),
    weight      double precision NOT NULL DEFAULT 1 CHECK (weight >= 0 AND weight <= 1),
    created_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (from_fact, to_fact, kind),
    CHECK (from_fact <> to_fact)
);
CREATE INDEX fact_links_to ON fact_links (to_fact);

-- A new fact that conflicted with a canon one, queued for the DM's review.
CREATE TABLE fact_conflicts (
    id          bigserial PRIMARY KEY,
    campaign_id text NOT NULL REFERENCES campaigns (id) ON DELETE CASCADE,
    new_fact    bigint NOT NULL REFERENCES relationships (id) ON DELETE CASCADE,
    old_fact    bigint NOT NULL REFERENCES relationships (id) ON DELETE CASCADE,
    kind        text NOT NULL CHECK (kind IN ('supersedes', 'contradicts')),
    resolution  text NOT NULL DEFAULT '' CHECK (resolution IN ('', 'kept_new', 'kept_old')),
    created_at  timestamptz NOT NULL DEFAULT now(),
    resolved_at timestamptz,
    UNIQUE (new_fact, old_fact)
);
CREATE INDEX fact_conflicts_open ON fact_conflicts (campaign_id, id) WHERE resolution = '';
