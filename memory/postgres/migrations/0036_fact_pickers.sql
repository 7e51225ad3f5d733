-- The fact pickers (Graph.FindFacts: Discord's autocomplete of /memory
-- confirm and /memory fact retire on every keystroke, the ledger read per
-- relation type, also by the hot context of an NPC that handed something
-- on, the console's graph, MCP read_graph) list facts newest first. With
-- no index in that order each call sorted every fact of the campaign:
-- 0.4 to 1.4 s at the 100k bench scale (500,000 facts), whatever was
-- typed. relationships_newest reads a campaign's facts newest first;
-- relationships_type the same per relation type, and the campaign's
-- distinct types one index probe each.
CREATE INDEX relationships_newest ON relationships (campaign_id, updated_at DESC, id DESC);
CREATE INDEX relationships_type ON relationships (campaign_id, rel_type, updated_at DESC, id DESC);
