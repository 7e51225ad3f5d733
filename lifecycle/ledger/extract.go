package ledger

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
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
//
// With an LLM, the rules only add what the model plainly missed: a line
// the model drew an entry of the same kind from is left to the model, and
// an entry a retraction took back ("no wait, he never gave you the
// lantern") is dropped whichever of the two found it. A promise, debt or
// handover said again (the same people, a similar what) is one entry
// quoting its latest restatement; a different one between the same two
// ("you also owe me a favour") is an entry of its own, told apart in the
// graph by its [AttrEntry] key.
type Extractor struct {
	Next postsession.Extractor
	// Ledger, when set, is the campaign's ledger as it stands (read as the
	// system or the DM), so that a restatement of an entry of an earlier
	// session is recognised and kept as that entry.
	Ledger Facts
}

var _ postsession.StagedExtractor = Extractor{}

// AttrEntry is the attribute of a ledger fact that tells apart different
// promises, debts or handovers between the same two (see [EntryKey]).
const AttrEntry = "entry"

// group is one entry of the ledger being extracted: its ends, what, the
// key it is stored under, and where it is (the index of its relationship
// in the extraction and the line it quotes; at is -1 for an entry of an
// earlier session).
type group struct {
	from, rel, to, what, key string
	at, line                 int
}

// Extract implements postsession.Extractor.
func (x Extractor) Extract(ctx context.Context, known []memory.Entity, entries []memory.TranscriptEntry) (postsession.Extraction, error) {
	var out postsession.Extraction
	if x.Next != nil {
		var err error
		if out, err = x.Next.Extract(ctx, known, entries); err != nil {
			return postsession.Extraction{}, err
		}
	}
	var groups []*group
	if x.Ledger != nil {
		items, err := List(ctx, x.Ledger)
		if err != nil {
			return postsession.Extraction{}, fmt.Errorf("extracting the ledger: %w", err)
		}
		for _, it := range items {
			groups = append(groups, &group{from: it.From, rel: it.Kind.Relation(), to: it.To, what: it.What, key: it.Entry, at: -1, line: -1})
		}
	}
	match := func(from, rel, to, what string) *group {
		for i := len(groups) - 1; i >= 0; i-- {
			g := groups[i]
			if g.from == from && g.rel == rel && g.to == to && (g.what == "" || what == "" || Same(g.what, what)) {
				return g
			}
		}
		return nil
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
	found, taken := find(entries, people)

	// The model's entries: those a retraction took back are dropped; the
	// others are keyed, a restatement under the key of what it restates.
	type seen struct {
		kind Kind
		line int
	}
	modelSaw := map[seen]bool{}
	kept := out.Relationships[:0:0]
	for _, r := range out.Relationships {
		k := KindOf(r.Type)
		if k == "" {
			if _, ok := r.Attributes[AttrEntry]; ok {
				// Only the ledger keys facts apart: a model's "entry" on
				// another fact would split it from its own restatements.
				r.Attributes = maps.Clone(r.Attributes)
				delete(r.Attributes, AttrEntry)
			}
			kept = append(kept, r)
			continue
		}
		line := quoted(entries, r.Evidence)
		if slices.ContainsFunc(taken, func(e Entry) bool { return e.Kind == k && e.Line == line }) {
			continue
		}
		modelSaw[seen{k, line}] = true
		what, _ := r.Attributes["what"].(string)
		rel := k.Relation()
		g := match(r.Source, rel, r.Target, what)
		if g == nil {
			g = &group{from: r.Source, rel: rel, to: r.Target, what: what, key: EntryKey(what), at: len(kept), line: line}
			groups = append(groups, g)
		} else if g.at >= 0 && line > g.line {
			g.at, g.line = len(kept), line
		}
		r.Attributes = withAttr(r.Attributes, AttrEntry, g.key)
		kept = append(kept, r)
	}
	out.Relationships = kept

	for _, e := range found {
		if modelSaw[seen{e.Kind, e.Line}] {
			continue // the model read this line and said what it holds
		}
		rel := e.Kind.Relation()
		l := entries[e.Line]
		if g := match(e.From, rel, e.To, e.What); g != nil {
			// The same promise or debt said again later: the ledger
			// quotes its latest restatement. (A handover happens once.)
			if e.Kind == Handover || e.Line <= g.line {
				continue
			}
			if g.at >= 0 {
				r := &out.Relationships[g.at]
				r.Evidence = quote(l)
				r.Attributes = withAttr(r.Attributes, "said_at", l.At.UTC().Format(time.RFC3339))
				if what, _ := r.Attributes["what"].(string); what == "" {
					r.Attributes["what"] = e.What
					g.what = e.What
				}
				g.line = e.Line
				continue
			}
			// An entry of an earlier session, restated: stored again
			// under its key, it is the same fact quoting this line.
			out.Relationships = append(out.Relationships, postsession.ExtractedRelationship{Source: e.From, Target: e.To, Type: rel,
				Confidence: RulesConfidence, Basis: string(memory.SourceStated), Evidence: quote(l),
				Attributes: map[string]any{"what": cmp.Or(g.what, e.What), "said_at": l.At.UTC().Format(time.RFC3339), AttrEntry: g.key}})
			g.at, g.line = len(out.Relationships)-1, e.Line
			continue
		}
		for _, n := range []string{e.From, e.To} {
			if speakers[n] {
				out.Entities = append(out.Entities, postsession.ExtractedEntity{Name: n, Type: memory.EntityPlayer,
					Description: "a player character at the table"})
				speakers[n] = false // listed once
			}
		}
		key := EntryKey(e.What)
		attrs := map[string]any{"what": e.What, "said_at": l.At.UTC().Format(time.RFC3339), AttrEntry: key}
		if e.Due != "" {
			attrs["due"] = e.Due
		}
		groups = append(groups, &group{from: e.From, rel: rel, to: e.To, what: e.What, key: key, at: len(out.Relationships), line: e.Line})
		out.Relationships = append(out.Relationships, postsession.ExtractedRelationship{Source: e.From, Target: e.To, Type: rel,
			Confidence: RulesConfidence, Basis: string(memory.SourceStated), Evidence: quote(l), Attributes: attrs})
	}
	return out, nil
}

// withAttr is attrs (copied, never changed in place) with k set to v.
func withAttr(attrs map[string]any, k string, v any) map[string]any {
	out := maps.Clone(attrs)
	if out == nil {
		out = map[string]any{}
	}
	out[k] = v
	return out
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
