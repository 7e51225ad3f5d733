-- A campaign's calendar (memory/calendar): month names and lengths,
-- weekdays, an era, as JSON. NULL is the numbered calendar ("day 12"),
-- under which game dates set by a campaign file stay free text.
ALTER TABLE campaigns ADD COLUMN calendar jsonb;
