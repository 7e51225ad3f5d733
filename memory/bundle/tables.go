package bundle

// Table is how one table of a campaign is carried in a bundle.
type Table struct {
	// Name is the table, and the kind of its records.
	Name string
	// From selects the table's rows of campaign $1 as t, in the order they
	// are written and read back (an order that satisfies the foreign keys
	// among rows of the same table, if any).
	From string
	// Serial is the column the target database assigns anew (a bigserial
	// id), remapped in references; "" when the table has none.
	Serial string
	// Refs maps a column to the table whose serial id it holds.
	Refs map[string]string
	// Skip lists columns never carried besides campaign_id and generated
	// ones: values the database derives (by trigger) from the rest.
	Skip []string
	// PayloadRefs, for proposals, remaps a fact id held in the payload
	// of proposals of the named kinds (payload.id).
	PayloadRefs map[string]string
}

// Tables returns the tables a bundle carries, in dependency order. Every
// table with a campaign_id column is either here or in [Skipped]; a test
// checks that against the schema, so a table added by a migration must be
// classified before its rows can be lost.
func Tables() []Table {
	return []Table{
		// A session's line counts are kept by the database as its lines
		// are written and struck (migration 0037).
		{Name: "sessions", From: `FROM sessions t WHERE t.campaign_id = $1 ORDER BY t.started_at, t.id`, Skip: []string{"entries", "struck"}},
		{Name: "transcript_entries", From: `FROM transcript_entries t WHERE t.campaign_id = $1 ORDER BY t.id`, Serial: "id",
			Skip: []string{"tsv"}},
		{Name: "entities", From: `FROM entities t WHERE t.campaign_id = $1 ORDER BY t.id`},
		{Name: "relationships", From: `FROM relationships t WHERE t.campaign_id = $1 ORDER BY t.id`, Serial: "id"},
		{Name: "fact_evidence", From: `FROM fact_evidence t JOIN relationships r ON r.id = t.fact_id
		WHERE r.campaign_id = $1 ORDER BY t.fact_id, t.entry_id`,
			Refs: map[string]string{"fact_id": "relationships", "entry_id": "transcript_entries"}},
		{Name: "fact_links", From: `FROM fact_links t WHERE t.campaign_id = $1 ORDER BY t.from_fact, t.to_fact, t.kind`,
			Refs: map[string]string{"from_fact": "relationships", "to_fact": "relationships"}},
		{Name: "fact_conflicts", From: `FROM fact_conflicts t WHERE t.campaign_id = $1 ORDER BY t.id`, Serial: "id",
			Refs: map[string]string{"new_fact": "relationships", "old_fact": "relationships"}},
		{Name: "chunks", From: `FROM chunks t WHERE t.campaign_id = $1 ORDER BY t.id`, Skip: []string{"tsv", "doc_len"}},
		{Name: "chunk_entities", From: `FROM chunk_entities t WHERE t.campaign_id = $1 ORDER BY t.chunk_id, t.entity_id`},
		// The lines an entity first heard in a split scene was heard in
		// (migration 0032): without them a copy would hide it from the
		// scene's players too.
		{Name: "entity_evidence", From: `FROM entity_evidence t WHERE t.campaign_id = $1 ORDER BY t.entity_id, t.entry_id`,
			Refs: map[string]string{"entry_id": "transcript_entries"}},
		{Name: "session_processing", From: `FROM session_processing t WHERE t.campaign_id = $1 ORDER BY t.session_id, t.stage`},
		{Name: "privacy_optouts", From: `FROM privacy_optouts t WHERE t.campaign_id = $1 ORDER BY t.user_id`},
		{Name: "proposals", From: `FROM proposals t WHERE t.campaign_id = $1 ORDER BY t.id`, Serial: "id",
			PayloadRefs: map[string]string{"delete_edge": "relationships"}},
		{Name: "dm_nodes", From: `FROM dm_nodes t WHERE t.campaign_id = $1 ORDER BY t.id`},
		{Name: "dm_edges", From: `FROM dm_edges t WHERE t.campaign_id = $1 ORDER BY t.id`, Serial: "id"},
		{Name: "kg_edges", From: `FROM kg_edges t WHERE t.campaign_id = $1 ORDER BY t.id`, Serial: "id"},
		// Per-player knowledge (migration 0023): who plays whom, who was
		// present when, what the DM granted.
		{Name: "player_characters", From: `FROM player_characters t WHERE t.campaign_id = $1 ORDER BY t.user_id`},
		{Name: "session_presence", From: `FROM session_presence t WHERE t.campaign_id = $1 ORDER BY t.session_id, t.at`},
		{Name: "player_grants", From: `FROM player_grants t WHERE t.campaign_id = $1 ORDER BY t.id`, Serial: "id",
			Refs: map[string]string{"fact_id": "relationships"}},
	}
}

// Skipped returns the tables with a campaign_id column a bundle leaves
// out, and why.
func Skipped() map[string]string {
	return map[string]string{
		"extraction_windows": "a cache of the language model's extractions, which may quote lines a player had forgotten",
		"graph_changes":      "the change log agents sync from; the import writes its own",
		"chunk_changes":      "the retrieval graph's log of changed chunk links; the import writes its own",
		"kg_sessions":        "agents' sync sessions, tied to the database they were opened on",
		"chunk_counts":       "full-text statistics, rebuilt by triggers",
		"chunk_lexemes":      "full-text statistics, rebuilt by triggers",
		"chunk_postings":     "full-text postings, rebuilt by triggers",
		"review_batches":     "the undo log of bulk review, naming fact ids of the database it was made in",
		"live_feeds":         "which running tables feed the console's Live page: process state, not memory",
		"console_signins":    "browsers signed in to the console: credentials, never carried to another database",
		"continuity_cards":   "the DM's continuity cards of live tables: they name fact ids of the database they were raised in",
	}
}

// settingsKind is the record kind of the campaign's own settings (the
// campaigns row less its id and creation time).
const settingsKind = "campaigns"

// endKind is the kind of the last record.
const endKind = "end"

// Format and Version identify the bundle format in its header.
const (
	Format  = "glyphoxa-campaign-bundle"
	Version = 1
)
