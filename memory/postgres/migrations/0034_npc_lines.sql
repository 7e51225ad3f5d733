-- The lines each NPC spoke, found without reading the campaign's other
-- lines: what an NPC heard (memory/postgres heard.go's npcSpokeCTE: the
-- chunks and lines within HeardWindow of its own canon lines) starts from
-- them. Without it, listing the chunks an NPC heard looked for its lines
-- near every chunk of the campaign: 0.2 s at the 100k bench scale (100k
-- chunks, 1M lines), for a console NPC page or an NPC-scoped ask. Only
-- NPC lines are indexed, a small part of the log.
CREATE INDEX transcript_entries_npc ON transcript_entries (campaign_id, npc_id, session_id, at) WHERE npc_id <> '';
