-- glyphoxa schema v1: campaigns, the session log (L1), the semantic index
-- (L2) and the knowledge graph (L3). Every row belongs to one campaign and
-- every key starts with the campaign id, so data of different campaigns can
-- never reference each other.

CREATE EXTENSION IF NOT EXISTS vector;
CREATE EXTENSION IF NOT EXISTS btree_gin;

CREATE TABLE glyphoxa_meta (
    key   text PRIMARY KEY,
    value text NOT NULL
);

CREATE TABLE campaigns (
    id         text PRIMARY KEY CHECK (id <> ''),
    created_at timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE sessions (
    campaign_id text NOT NULL REFERENCES campaigns (id) ON DELETE CASCADE,
    id          text NOT NULL CHECK (id <> ''),
    started_at  timestamptz NOT NULL,
    ended_at    timestamptz,
    PRIMARY KEY (campaign_id, id)
);

-- L1: the session log.
CREATE TABLE transcript_entries (
    id              bigserial PRIMARY KEY,
    campaign_id     text NOT NULL,
    session_id      text NOT NULL,
    speaker_id      text NOT NULL DEFAULT '',
    speaker_name    text NOT NULL DEFAULT '',
    npc_id          text NOT NULL DEFAULT '',
    text            text NOT NULL,
    raw_text        text NOT NULL DEFAULT '',
    at              timestamptz NOT NULL,
    duration_ms     integer NOT NULL DEFAULT 0 CHECK (duration_ms >= 0),
    idempotency_key text,
    tsv             tsvector GENERATED ALWAYS AS (to_tsvector('english', text)) STORED,
    FOREIGN KEY (campaign_id, session_id) REFERENCES sessions (campaign_id, id) ON DELETE CASCADE
);
CREATE INDEX transcript_entries_session_at ON transcript_entries (campaign_id, session_id, at, id);
CREATE INDEX transcript_entries_speaker_at ON transcript_entries (campaign_id, speaker_id, at);
CREATE UNIQUE INDEX transcript_entries_idempotency ON transcript_entries (campaign_id, idempotency_key)
    WHERE idempotency_key IS NOT NULL;
CREATE INDEX transcript_entries_tsv ON transcript_entries USING gin (campaign_id, tsv);

-- L3: the knowledge graph.
CREATE TABLE entities (
    campaign_id text NOT NULL REFERENCES campaigns (id) ON DELETE CASCADE,
    id          text NOT NULL CHECK (id <> ''),
    type        text NOT NULL CHECK (type <> ''),
    name        text NOT NULL CHECK (name <> ''),
    aliases     text[] NOT NULL DEFAULT '{}',
    attributes  jsonb NOT NULL DEFAULT '{}',
    created_at  timestamptz NOT NULL DEFAULT now(),
    updated_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (campaign_id, id)
);
CREATE INDEX entities_type ON entities (campaign_id, type);
CREATE INDEX entities_lower_name ON entities (campaign_id, lower(name));

CREATE TABLE relationships (
    id                  bigserial PRIMARY KEY,
    campaign_id         text NOT NULL,
    source_id           text NOT NULL,
    target_id           text NOT NULL,
    rel_type            text NOT NULL CHECK (rel_type <> ''),
    attributes          jsonb NOT NULL DEFAULT '{}',
    session_id          text NOT NULL DEFAULT '',
    established_at      timestamptz NOT NULL DEFAULT now(),
    confidence          double precision NOT NULL CHECK (confidence >= 0 AND confidence <= 1),
    source              text NOT NULL CHECK (source IN ('stated', 'inferred')),
    dm_confirmed        boolean NOT NULL DEFAULT false,
    status              text NOT NULL CHECK (status IN ('active', 'pending', 'rejected', 'retired')),
    valid_until_session text NOT NULL DEFAULT '',
    created_at          timestamptz NOT NULL DEFAULT now(),
    updated_at          timestamptz NOT NULL DEFAULT now(),
    FOREIGN KEY (campaign_id, source_id) REFERENCES entities (campaign_id, id) ON DELETE CASCADE,
    FOREIGN KEY (campaign_id, target_id) REFERENCES entities (campaign_id, id) ON DELETE CASCADE
);
-- One live (active or pending) fact per (source, target, type).
CREATE UNIQUE INDEX relationships_live ON relationships (campaign_id, source_id, target_id, rel_type)
    WHERE status IN ('active', 'pending');
CREATE INDEX relationships_out ON relationships (campaign_id, source_id) INCLUDE (target_id, rel_type)
    WHERE status = 'active';
CREATE INDEX relationships_in ON relationships (campaign_id, target_id) INCLUDE (source_id, rel_type)
    WHERE status = 'active';
CREATE INDEX relationships_pending ON relationships (campaign_id, created_at, id)
    WHERE status = 'pending';
CREATE INDEX relationships_triple ON relationships (campaign_id, source_id, target_id, rel_type);

-- L2: the semantic index. The embedding column gets its dimension when the
-- store is first opened (see glyphoxa_meta.embedding_dimensions).
CREATE TABLE chunks (
    campaign_id text NOT NULL,
    id          text NOT NULL CHECK (id <> ''),
    session_id  text NOT NULL,
    content     text NOT NULL,
    embedding   vector,
    speaker_ids text[] NOT NULL DEFAULT '{}',
    start_at    timestamptz,
    end_at      timestamptz,
    tsv         tsvector GENERATED ALWAYS AS (to_tsvector('english', content)) STORED,
    updated_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (campaign_id, id),
    FOREIGN KEY (campaign_id, session_id) REFERENCES sessions (campaign_id, id) ON DELETE CASCADE
);
CREATE INDEX chunks_session ON chunks (campaign_id, session_id, start_at);
CREATE INDEX chunks_tsv ON chunks USING gin (campaign_id, tsv);

-- Which entities a chunk mentions; an entity can be linked to many chunks.
CREATE TABLE chunk_entities (
    campaign_id text NOT NULL,
    chunk_id    text NOT NULL,
    entity_id   text NOT NULL,
    PRIMARY KEY (campaign_id, entity_id, chunk_id),
    FOREIGN KEY (campaign_id, chunk_id) REFERENCES chunks (campaign_id, id) ON DELETE CASCADE,
    FOREIGN KEY (campaign_id, entity_id) REFERENCES entities (campaign_id, id) ON DELETE CASCADE
);
CREATE INDEX chunk_entities_chunk ON chunk_entities (campaign_id, chunk_id);
