-- The newest change of a campaign's entities in one index probe
-- (Campaign.LastEntityChange): retrieval reloads its name index when an
-- entity changes, and a campaign logs many more fact changes than entity
-- changes, which a scan of graph_changes_campaign would step over.
CREATE INDEX graph_changes_entity ON graph_changes (campaign_id, id) WHERE kind = 'entity';
