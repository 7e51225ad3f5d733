-- The session log is searched in the campaign's language, as its chunks
-- are (0013).
--
-- transcript_entries.tsv was a generated column fixed to english; it
-- becomes a plain column that a trigger fills from the campaign's
-- text-search configuration (campaigns.text_config) as lines are written
-- or amended. Campaign.SetLanguage re-indexes a campaign's lines with its
-- chunks.

ALTER TABLE transcript_entries ALTER COLUMN tsv DROP EXPRESSION;

CREATE FUNCTION transcript_text_fill() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    NEW.tsv := to_tsvector(coalesce((SELECT c.text_config FROM campaigns c WHERE c.id = NEW.campaign_id),
                                    'english'::regconfig), NEW.text);
    RETURN NEW;
END
$$;

CREATE TRIGGER transcript_entries_text_fill BEFORE INSERT OR UPDATE OF text, campaign_id ON transcript_entries
    FOR EACH ROW EXECUTE FUNCTION transcript_text_fill();

-- Lines of campaigns already set to another language than english.
UPDATE transcript_entries t SET tsv = to_tsvector(c.text_config, t.text)
FROM campaigns c WHERE c.id = t.campaign_id AND c.text_config <> 'english'::regconfig;
