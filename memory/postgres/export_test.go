package postgres

import (
	"context"

	"github.com/jackc/pgx/v5"

	"github.com/glyphoxa/glyphoxa/memory"
)

// TopPostingsForTest runs the early-stopping half of TextSearch alone: the
// hits it finds from the words' top postings and whether it proved them
// the best of all chunks.
func (x *SemanticIndex) TopPostingsForTest(ctx context.Context, query string, limit int) ([]ChunkHit, bool, error) {
	terms, avgLen, err := x.textTerms(ctx, query)
	if err != nil || len(terms) == 0 {
		return nil, true, err
	}
	return x.topPostings(ctx, query, terms, avgLen, limit)
}

// PublicAttrsSQLForTest is the SQL expression of entity alias's public
// attributes every entity read uses.
func PublicAttrsSQLForTest(alias string) string { return publicAttrs(alias) }

// FactAttrsSQLForTest is the SQL expression of the attributes of fact
// alias a player's handle reads (an NPC's is the same).
func FactAttrsSQLForTest(alias string) string { return view{v: memory.PlayerViewer()}.factAttrs(alias) }

// CommonForTest reports whether SessionLog.Search with query and o reads
// the newest lines by time (the words are common among the lines it may
// return) rather than every match through the full-text index.
func (l *SessionLog) CommonForTest(ctx context.Context, query string, o memory.SearchOpts) (bool, error) {
	_, match := l.searchMatch(o)
	var yes bool
	err := l.db.QueryRow(ctx, `WITH `+commonCTE(match)+` SELECT yes FROM common WHERE $7::int IS NOT NULL`,
		pgx.QueryExecModeExec, l.campaign, query, o.SessionID, o.SpeakerID, nullTime(o.After), nullTime(o.Before), 1, DefaultLanguage).Scan(&yes)
	return yes, err
}

// SearchSampleForTest is how many of the newest lines SessionLog.Search
// samples to tell a common word from a rare one.
const SearchSampleForTest = searchSample

// SecretKeyStartsForTest is the alternation publicAttrs looks for.
const SecretKeyStartsForTest = secretKeyStarts

// ScanAttributesForTest decodes attribute JSON as Neighbors does.
func ScanAttributesForTest(b []byte) (map[string]any, error) {
	var a attributesScan
	err := a.ScanBytes(b)
	return a.m, err
}

// FactVisibleSQLForTest is the SQL predicate true when viewer v may see
// fact alias (view.factVisible), the rule glyphoxa_fact_public (migration
// 0039) restates for the trigger.
func FactVisibleSQLForTest(v memory.Viewer, alias string) string {
	return view{v: v}.factVisible(alias)
}

// DeleteSessionChunksSQL is the statement DeleteSessionChunks runs.
const DeleteSessionChunksSQL = deleteSessionChunksSQL
