package ledger

import (
	"context"
	"fmt"
	"maps"
	"strings"
	"time"

	"github.com/glyphoxa/glyphoxa/lifecycle/postsession"
	"github.com/glyphoxa/glyphoxa/memory"
)

// RulesConfidence is the confidence of an entry found by Find: below the
// store's review threshold (0.7 by default), so that the DM confirms each
// one; who "you" was is a guess from the lines around it.
const RulesConfidence = 0.6

// Extractor is a post-session fact extractor that adds the entries Find
// catches to what Next (the LLM's extractor, or nil without one) finds.
// A promise, debt or handover Next also found is kept as Next gave it.
type Extractor struct {
	Next postsession.Extractor
}

var _ postsession.StagedExtractor = Extractor{}

// Extract implements postsession.Extractor.
func (x Extractor) Extract(ctx context.Context, known []memory.Entity, entries []memory.TranscriptEntry) (postsession.Extraction, error) {
	var out postsession.Extraction
	if x.Next != nil {
		var err error
		if out, err = x.Next.Extract(ctx, known, entries); err != nil {
			return postsession.Extraction{}, err
		}
	}
	people := make([]Person, 0, len(known))
	byName := map[string]bool{}
	for _, e := range known {
		people = append(people, Person{Name: e.Name, Type: e.Type, Aliases: e.Aliases})
		byName[e.Name] = true
	}
	speakers := map[string]bool{}
	for _, l := range entries {
		if l.NPCID == "" && l.SpeakerName != "" && !byName[l.SpeakerName] && !speakers[l.SpeakerName] {
			speakers[l.SpeakerName] = true
			people = append(people, Person{Name: l.SpeakerName, Type: memory.EntityPlayer})
		}
	}
	// have indexes the facts found so far by who, relation and to whom
	// (the graph keeps one fact for each), with the line each quotes.
	type found struct{ at, line int }
	have := map[string]found{}
	for i, r := range out.Relationships {
		have[r.Source+"\x00"+strings.ToUpper(r.Type)+"\x00"+r.Target] = found{i, quoted(entries, r.Evidence)}
	}
	for _, e := range Find(entries, people) {
		rel := e.Kind.Relation()
		key := e.From + "\x00" + rel + "\x00" + e.To
		if h, ok := have[key]; ok {
			// The same promise or debt said again later: the ledger
			// quotes its latest restatement.
			r := &out.Relationships[h.at]
			what, _ := r.Attributes["what"].(string)
			if e.Kind != Handover && e.Line > h.line && (what == "" || Similar(what, e.What)) {
				l := entries[e.Line]
				r.Evidence = quote(l)
				attrs := maps.Clone(r.Attributes)
				if attrs == nil {
					attrs = map[string]any{}
				}
				attrs["said_at"] = l.At.UTC().Format(time.RFC3339)
				if what == "" {
					attrs["what"] = e.What
				}
				r.Attributes = attrs
				have[key] = found{h.at, e.Line}
			}
			continue
		}
		have[key] = found{len(out.Relationships), e.Line}
		for _, n := range []string{e.From, e.To} {
			if speakers[n] {
				out.Entities = append(out.Entities, postsession.ExtractedEntity{Name: n, Type: memory.EntityPlayer,
					Description: "a player character at the table"})
				speakers[n] = false // listed once
			}
		}
		l := entries[e.Line]
		attrs := map[string]any{"what": e.What, "said_at": l.At.UTC().Format(time.RFC3339)}
		if e.Due != "" {
			attrs["due"] = e.Due
		}
		out.Relationships = append(out.Relationships, postsession.ExtractedRelationship{Source: e.From, Target: e.To, Type: rel,
			Confidence: RulesConfidence, Basis: string(memory.SourceStated), Evidence: quote(l), Attributes: attrs})
	}
	return out, nil
}

// quoted is the index of the line evidence quotes (the line whose text
// holds it, or which it holds, as "Lyra: …" does), or -1.
func quoted(entries []memory.TranscriptEntry, evidence string) int {
	ev := strings.ToLower(strings.TrimSpace(evidence))
	if ev == "" {
		return -1
	}
	at := -1
	for i, l := range entries {
		t := strings.ToLower(strings.TrimSpace(l.Text))
		if t != "" && (strings.Contains(t, ev) || strings.Contains(ev, t)) {
			at = i // the last such line
		}
	}
	return at
}

// quote is a line as the ledger quotes it.
func quote(l memory.TranscriptEntry) string {
	return fmt.Sprintf("%s: %s", l.SpeakerName, l.Text)
}

// StageLedger is the progress stage of the explicit forms found without
// an LLM: a session processed so is not marked as extracted, and the LLM
// extracts it when one is configured (glyphoxa process --extract).
const StageLedger = "ledger"

// Stage implements postsession.StagedExtractor.
func (x Extractor) Stage() string {
	if x.Next == nil {
		return StageLedger
	}
	return postsession.StageExtract
}
