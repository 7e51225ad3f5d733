-- The retrieval graph's refresh reads the chunks written since its cursor
-- (updated_at, id): this index makes that a range scan, so a refresh with
-- nothing new costs a lookup instead of re-reading the last batch.
CREATE INDEX chunks_updated ON chunks (campaign_id, updated_at, id);

-- A session's date in the game's own calendar ("the 3rd of Frostfall"),
-- when the campaign gives one; retrieval results carry it beside the
-- table's date.
ALTER TABLE sessions ADD COLUMN game_date text NOT NULL DEFAULT '';
