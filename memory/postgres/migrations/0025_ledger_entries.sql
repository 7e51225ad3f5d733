-- Two different promises, debts or handovers between the same two people
-- ("you owe me five gold", then "you also owe me a favour") are two facts.
-- The ledger (lifecycle/ledger) keys each under the attribute "entry";
-- a restatement of one carries its key and merges into it, as before. The
-- live fact of a triple is now the one of its entry ('' for every other
-- fact, so nothing else changes).
ALTER TABLE relationships ADD COLUMN entry text GENERATED ALWAYS AS (coalesce(attributes->>'entry', '')) STORED;
DROP INDEX relationships_live;
CREATE UNIQUE INDEX relationships_live ON relationships (campaign_id, source_id, target_id, rel_type, proposed_by, entry)
    WHERE status IN ('active', 'pending');
