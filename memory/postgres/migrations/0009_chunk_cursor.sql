-- The retrieval graph's refresh reads the chunks written since its cursor
-- (updated_at, id): this index makes that a range scan, so a refresh with
-- nothing new costs a lookup instead of re-reading the last batch.
CREATE INDEX chunks_updated ON chunks (campaign_id, updated_at, id);
