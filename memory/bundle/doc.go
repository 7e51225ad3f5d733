// Package bundle writes a campaign's whole memory to a portable file and
// reads it back into another campaign or another database: the backup and
// the move behind `glyphoxa export` and `glyphoxa import`, and the
// console's download.
//
// # Format
//
// A bundle is JSON Lines (one JSON object per line), optionally gzipped
// (import recognises gzip by its magic bytes). The first line is the
// header, the last the end record; every line between is one stored row:
//
//	{"format":"glyphoxa-campaign-bundle","version":1,"campaign":"ironhold","exported_at":"…","schema":14}
//	{"kind":"campaigns","row":{"kg_token_limit":5000,"text_config":"english"}}
//	{"kind":"sessions","row":{"id":"s1","started_at":"…","summary":"…",…}}
//	{"kind":"transcript_entries","row":{"id":17,"session_id":"s1","text":"…",…}}
//	…
//	{"kind":"end","counts":{"sessions":3,"transcript_entries":120,…}}
//
// A row names every column of its table explicitly (PostgreSQL's to_jsonb
// of the row), less the campaign id and the columns the database derives
// (full-text vectors, chunk lengths). A column added by a later migration
// is carried without a change here; a bundle holding a column the target
// database lacks is refused, naming it, unless its value is null. Version
// is the format's version: import refuses a newer one.
//
// Kinds come in dependency order (see [Tables]): the campaign's settings,
// sessions with their summaries, transcript lines, entities (personas are
// NPC entities' attributes), facts with their whole history (active,
// pending, rejected and retired, with who proposed them and when they
// stopped holding), evidence (which lines a fact was heard in), fact links
// (supersedes …), conflicts and their resolutions, chunks with their
// embeddings, chunk mentions, processing state, opt-outs, agents'
// proposals, and the memory-tool notes: the DM's private level (dm_nodes,
// dm_edges) and the campaign level's edges to artifacts (kg_edges).
//
// # Ids
//
// Text ids (entities, sessions, chunks, DM nodes) are kept: they are
// unique within a campaign. Serial ids (facts, transcript lines,
// conflicts, proposals, DM edges) are assigned anew by the target
// database, and every reference to them (evidence, fact links, conflicts,
// a delete_edge proposal's fact) is remapped.
//
// # What is left out
//
// Nothing a player asked to forget is exported: forgetting deletes the
// lines, chunks and facts (postgres.Campaign.ForgetSpeaker), and
// extraction_windows, a cache of the language model's extractions that
// may quote forgotten lines, is never exported. The change log
// (graph_changes), agents' sync sessions (kg_sessions), the full-text
// statistics and postings (chunk_counts, chunk_lexemes, chunk_postings:
// triggers rebuild them) and leases are not campaign content.
//
// # Streaming and transactions
//
// Export reads one consistent snapshot (a read-only repeatable-read
// transaction) and streams rows to the writer as the database returns
// them. Import reads the bundle line by line and writes in batches inside
// one transaction: a bad bundle (malformed line, unknown kind or column, a
// reference to a row it does not hold, a missing or disagreeing end
// record) leaves the target untouched. Neither holds the campaign in
// memory: import keeps only the old-to-new map of serial ids (two int64
// per fact and per line, a few megabytes for 100,000 lines).
package bundle
