-- The time of the last line a stage's progress covers (the last line of
-- the last window extraction stored): a line stored later with an earlier
-- time (an outage spool replayed late into a session being played) falls
-- into windows already extracted, and the session's processing is marked
-- to run again (LateLinesStage, markLateLines in sessionlog.go).
ALTER TABLE session_processing ADD COLUMN covered_at timestamptz;
