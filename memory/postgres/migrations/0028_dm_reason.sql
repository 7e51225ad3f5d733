-- Until the DM's reason for a fact became the DM-only attribute dm_reason, it
-- was stored as "reason", which players and NPCs could read:
-- the reason may tell what players do not know yet ("captured by the
-- cult"). Facts the DM wrote carry it as the DM-only "dm_reason" from now
-- on. A "reason" the DM put on a fact in a campaign file moves too: hiding
-- it is the safe side, and the DM still reads it. The change log is not
-- flooded: this is no edit anyone made.
ALTER TABLE relationships DISABLE TRIGGER relationships_log;
UPDATE relationships
SET attributes = (attributes - 'reason') || jsonb_build_object('dm_reason', attributes->'reason')
WHERE proposed_by = '' AND dm_confirmed AND attributes ? 'reason' AND NOT attributes ? 'dm_reason';
ALTER TABLE relationships ENABLE TRIGGER relationships_log;
