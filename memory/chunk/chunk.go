// Package chunk turns a session's corrected transcript (L1) into chunks for
// the semantic index (L2).
//
// [Split] cuts a session into spans at scene breaks (a long silence or a
// scene marker such as "---" or "Scene:"), at topic shifts (the words of the
// lines before and after a point have little in common) and, failing
// those, at a fixed window of lines or characters; windows cut for length
// overlap by a few lines so that no exchange is cut in half. Each chunk
// keeps its session, speakers, time span and the entities it mentions,
// its speakers' own entities included (found by name through the same
// [mention.Matcher]).
// Chunk ids derive from the lines they span (their idempotency keys, which
// an import takes from the campaign file, else their row ids), so
// splitting the same session again gives the same chunks, two imports of
// the same file give the same chunk ids (and so the same tie-breaks in
// retrieval), and [Process] replaces a session's chunks rather than adding
// to them. A single turn longer than MaxChars is cut at sentence ends
// into parts, each keeping the turn's speaker and time. [Process],
// [EmbedPending] and [Live] embed in the campaign's language
// ([embed.ForLanguage]).
package chunk

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/glyphoxa/glyphoxa/memory"
	"github.com/glyphoxa/glyphoxa/memory/embed"
	"github.com/glyphoxa/glyphoxa/memory/mention"
)

// Options tune [Split]. Zero fields take the defaults.
type Options struct {
	// MaxLines is the most lines in a chunk (default 10).
	MaxLines int
	// MaxChars is the most characters of text in a chunk (default 1200).
	MaxChars int
	// Overlap is how many lines a window cut for length shares with the
	// next one (default 2).
	Overlap int
	// MinLines is the fewest lines before a topic shift may cut (default 4).
	MinLines int
	// SceneGap is the silence that marks a scene break (default 3 minutes).
	SceneGap time.Duration
	// TopicWindow is how many lines on each side a topic shift compares
	// (default 3).
	TopicWindow int
	// TopicThreshold is the word-overlap cosine below which the talk has
	// changed topic (default 0.08).
	TopicThreshold float64
}

func (o Options) withDefaults() Options {
	if o.MaxLines <= 0 {
		o.MaxLines = 10
	}
	if o.MaxChars <= 0 {
		o.MaxChars = 1200
	}
	if o.Overlap < 0 || o.Overlap >= o.MaxLines {
		o.Overlap = 0
	} else if o.Overlap == 0 {
		o.Overlap = 2
	}
	if o.MinLines <= 0 {
		o.MinLines = 4
	}
	if o.SceneGap <= 0 {
		o.SceneGap = 3 * time.Minute
	}
	if o.TopicWindow <= 0 {
		o.TopicWindow = 3
	}
	if o.TopicThreshold <= 0 {
		o.TopicThreshold = 0.08
	}
	return o
}

// Split cuts one session's entries (in time order) into chunks. Non-canon
// lines are left out. Entities are found with m, which may be nil. The
// chunks have no embeddings yet.
func Split(entries []memory.TranscriptEntry, m *mention.Matcher, o Options) []memory.Chunk {
	o = o.withDefaults()
	var lines []memory.TranscriptEntry
	var parts []int // for each line, which part of its entry it is (0: the first or only one)
	for _, e := range entries {
		if !e.NonCanon && strings.TrimSpace(e.Text) != "" {
			// Room for the speaker's label that prefixes the line in the chunk.
			label := len(e.SpeakerName)
			if label == 0 {
				label = len(e.SpeakerID)
			}
			if label > 0 {
				label += len(": ")
			}
			for i, p := range splitLong(e, max(o.MaxChars-label, o.MaxChars/2)) {
				lines = append(lines, p)
				parts = append(parts, i)
			}
		}
	}
	bags := make([]map[string]float64, len(lines))
	for i, e := range lines {
		bags[i] = bag(e.Text)
	}
	var out []memory.Chunk
	start := 0
	for start < len(lines) {
		end := start + 1 // exclusive
		chars := len(lines[start].Text)
		cutForLength := false
		for end < len(lines) {
			if isSceneBreak(lines[end-1], lines[end], o) {
				break
			}
			if end-start >= o.MinLines && topicShift(bags, end, o) {
				break
			}
			if end-start >= o.MaxLines || chars+len(lines[end].Text) > o.MaxChars {
				cutForLength = true
				break
			}
			chars += len(lines[end].Text)
			end++
		}
		out = append(out, build(lines[start:end], parts[start:end], start, m))
		if end >= len(lines) {
			break
		}
		next := end
		if cutForLength && o.Overlap > 0 {
			next = max(end-o.Overlap, start+1)
		}
		start = next
	}
	return out
}

// isSceneBreak reports whether a scene ends between prev and next.
func isSceneBreak(prev, next memory.TranscriptEntry, o Options) bool {
	if next.At.Sub(prev.At.Add(prev.Duration)) >= o.SceneGap {
		return true
	}
	t := strings.ToLower(strings.TrimSpace(next.Text))
	for _, p := range []string{"---", "***", "scene:", "[scene", "# scene", "later that", "the next morning", "meanwhile"} {
		if strings.HasPrefix(t, p) {
			return true
		}
	}
	return false
}

// topicShift compares the words of the TopicWindow lines before i with
// those from i on.
func topicShift(bags []map[string]float64, i int, o Options) bool {
	if i+o.TopicWindow > len(bags) || i-o.TopicWindow < 0 {
		return false
	}
	left, right := map[string]float64{}, map[string]float64{}
	for _, b := range bags[i-o.TopicWindow : i] {
		for w, n := range b {
			left[w] += n
		}
	}
	for _, b := range bags[i : i+o.TopicWindow] {
		for w, n := range b {
			right[w] += n
		}
	}
	var dot, nl, nr float64
	for w, n := range left {
		dot += n * right[w]
		nl += n * n
	}
	for _, n := range right {
		nr += n * n
	}
	if nl == 0 || nr == 0 {
		return false
	}
	return dot/math.Sqrt(nl*nr) < o.TopicThreshold
}

func bag(text string) map[string]float64 {
	b := map[string]float64{}
	for _, w := range embed.Words(text) {
		b[w]++
	}
	return b
}

// build makes the chunk of lines; parts say which part of its entry each
// line is ([splitLong]); offset is the index of its first line in the
// session, used for the id when lines have no stored id.
func build(lines []memory.TranscriptEntry, parts []int, offset int, m *mention.Matcher) memory.Chunk {
	var b strings.Builder
	var speakers []string
	seenSpeaker := map[string]bool{}
	var entities []string
	seenEntity := map[string]bool{}
	addEntity := func(id string) {
		if id != "" && !seenEntity[id] {
			seenEntity[id] = true
			entities = append(entities, id)
		}
	}
	h := sha256.New()
	for i, e := range lines {
		if i > 0 {
			b.WriteByte('\n')
		}
		speaker := e.SpeakerName
		if speaker == "" {
			speaker = e.SpeakerID
		}
		if speaker != "" {
			b.WriteString(speaker)
			b.WriteString(": ")
		}
		b.WriteString(strings.TrimSpace(e.Text))
		if e.SpeakerID != "" && !seenSpeaker[e.SpeakerID] {
			seenSpeaker[e.SpeakerID] = true
			speakers = append(speakers, e.SpeakerID)
		}
		addEntity(e.NPCID)
		if m != nil && e.NPCID == "" && e.SpeakerName != "" {
			// A speaker is linked to their entity: a player's lines are
			// about what that player did, said or plans, though they
			// rarely say their own name.
			for _, id := range m.Find(e.SpeakerName) {
				addEntity(id)
			}
		}
		if m != nil {
			for _, id := range m.Find(e.Text) {
				addEntity(id)
			}
		}
		// A line's idempotency key names it the same in every import of
		// the same file; its row id does not.
		switch {
		case e.IdempotencyKey != "":
			fmt.Fprintf(h, "k%q", e.IdempotencyKey)
			if parts[i] > 0 {
				fmt.Fprintf(h, ".%d", parts[i])
			}
			h.Write([]byte{'\n'})
		case e.ID != 0 && parts[i] > 0:
			fmt.Fprintf(h, "%d.%d\n", e.ID, parts[i])
		case e.ID != 0:
			fmt.Fprintf(h, "%d\n", e.ID)
		default:
			fmt.Fprintf(h, "#%d\n", offset+i)
		}
	}
	first, last := lines[0], lines[len(lines)-1]
	return memory.Chunk{
		ID:         first.SessionID + "/" + hex.EncodeToString(h.Sum(nil))[:16],
		SessionID:  first.SessionID,
		Content:    b.String(),
		SpeakerIDs: speakers,
		EntityIDs:  entities,
		StartAt:    first.At,
		EndAt:      last.At.Add(last.Duration),
	}
}
