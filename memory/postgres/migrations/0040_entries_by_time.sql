-- The campaign's lines by time: a session-log search for a common word
-- (SessionLog.Search) reads its newest matching lines in this order and
-- stops after postgres.SearchCandidates of them, where ranking every match
-- of a word said in half of a million lines took 2 s. (Reading one
-- session's lines uses transcript_entries_session_at.)
CREATE INDEX transcript_entries_campaign_at ON transcript_entries (campaign_id, at, id);
