// Package campaignfile reads and applies campaign files: YAML documents that
// seed a campaign's memory with entities, relationships and session
// transcripts.
//
//	campaign: ironhold-saga
//	calendar: {months: [{name: Deepwinter, days: 30}, {name: Frostfall, days: 30}], era: DR}
//	entities:
//	  - {id: grimjaw, type: npc, name: Grimjaw, aliases: [Grim], attributes: {occupation: blacksmith}}
//	relationships:
//	  - {source: grimjaw, target: ironhold, type: LOCATED_AT, attributes: {},
//	     provenance: {source: stated, confidence: 0.9, session: s1}}
//	sessions:
//	  - id: s1
//	    started_at: 2026-03-01T19:00:00Z
//	    game_date: 3 Frostfall 1452
//	    entries:
//	      - {speaker_id: u1, speaker_name: Thorin, npc_id: "", text: "...", raw_text: "...",
//	         at: 2026-03-01T19:01:05Z, duration_ms: 2300}
//
// [Parse] checks the whole file before anything is written and names the
// line of every problem. [File.Apply] is idempotent: applying the same file
// twice changes nothing.
package campaignfile

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"gopkg.in/yaml.v3"

	"github.com/glyphoxa/glyphoxa/internal/yamlkeys"
	"github.com/glyphoxa/glyphoxa/memory"
	"github.com/glyphoxa/glyphoxa/memory/calendar"
)

// File is a parsed, validated campaign file.
type File struct {
	Campaign string `yaml:"campaign"`
	// Language is the campaign's language: a code ("en", "de") or the
	// name of a PostgreSQL text-search configuration ("german"). It
	// selects the stemming and stop words of full-text search over the
	// campaign's chunks and session log. Empty leaves the campaign's
	// language as it is (English for a new campaign). The importer
	// applies it (an explicit `import --language` wins).
	Language string `yaml:"language,omitempty"`
	// Calendar is the campaign's calendar (see package calendar): month
	// names and lengths, weekdays, an era. With one, every session's
	// game_date must be a date of it; without one, game dates are free
	// text and the campaign keeps the calendar it has (the numbered
	// calendar, "day 12", by default).
	Calendar     *calendar.Calendar `yaml:"calendar,omitempty"`
	calendarLine int
	// Players maps a Discord user id to the character entity that member
	// plays; each character must be an entity of the file.
	Players       Players `yaml:"players,omitempty"`
	playersLine   int
	Entities      []Entity       `yaml:"entities"`
	Relationships []Relationship `yaml:"relationships"`
	Sessions      []Session      `yaml:"sessions"`
	// Warnings are problems that do not stop an import, each naming its
	// line (an entity type glyphoxa does not know, say). Import's --strict
	// turns them into errors.
	Warnings []string `yaml:"-"`
}

// KnownEntityTypes are the entity types glyphoxa knows; others import with
// a warning.
var KnownEntityTypes = []string{memory.EntityNPC, memory.EntityPlayer, memory.EntityLocation, memory.EntityItem,
	memory.EntityFaction, memory.EntityEvent, memory.EntityQuest, memory.EntityConcept}

// q quotes a value for an error message: escaped, and cut when long.
func q(s string) string { return memory.Quote(s, 60) }

// Entity is one knowledge-graph entity.
type Entity struct {
	ID         string         `yaml:"id"`
	Type       string         `yaml:"type"`
	Name       string         `yaml:"name"`
	Aliases    []string       `yaml:"aliases"`
	Attributes map[string]any `yaml:"attributes"`
	line       int
}

// Relationship is one fact between two entities of the file (or of the
// campaign already in the database).
type Relationship struct {
	Source     string         `yaml:"source"`
	Target     string         `yaml:"target"`
	Type       string         `yaml:"type"`
	Attributes map[string]any `yaml:"attributes"`
	Provenance Provenance     `yaml:"provenance"`
	line       int
}

// Provenance says where a fact comes from. Confidence defaults to 1 and
// source to "stated".
type Provenance struct {
	Source      string    `yaml:"source"`
	Confidence  *float64  `yaml:"confidence"`
	Session     string    `yaml:"session"`
	At          time.Time `yaml:"at"`
	DMConfirmed bool      `yaml:"dm_confirmed"`
}

// Session is one game session and its transcript.
type Session struct {
	ID        string    `yaml:"id"`
	StartedAt time.Time `yaml:"started_at"`
	EndedAt   time.Time `yaml:"ended_at"`
	// GameDate is the session's date in the game's calendar (optional).
	GameDate string  `yaml:"game_date"`
	Entries  []Entry `yaml:"entries"`
	line     int
}

// Entry is one transcript line.
type Entry struct {
	// ID, if set, identifies the line for idempotent re-imports; otherwise
	// the line is identified by its session, speaker, time and text.
	ID          string    `yaml:"id"`
	SpeakerID   string    `yaml:"speaker_id"`
	SpeakerName string    `yaml:"speaker_name"`
	NPCID       string    `yaml:"npc_id"`
	Text        string    `yaml:"text"`
	RawText     string    `yaml:"raw_text"`
	At          time.Time `yaml:"at"`
	DurationMS  int       `yaml:"duration_ms"`
	line        int
}

// ErrInvalid is wrapped by every validation error.
var ErrInvalid = errors.New("invalid campaign file")

// Parse reads and validates a campaign file. name labels error messages
// (usually the path). Unknown keys, wrong types, missing or duplicate ids,
// dangling references and times outside their session are errors naming the
// line.
func Parse(r io.Reader, name string) (*File, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", name, err)
	}
	if i := bytes.IndexByte(data, 0); i >= 0 {
		return nil, fmt.Errorf("%s: %w", name, lineErr(bytes.Count(data[:i], []byte("\n"))+1,
			"a NUL byte at column %d (a campaign file is text)", i-bytes.LastIndexByte(data[:i], '\n')))
	}
	if err := checkUTF8(data, 1); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	var root yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&root); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("%s: %w: the file is empty", name, ErrInvalid)
		}
		return nil, fmt.Errorf("%s: %w: %v", name, ErrInvalid, err)
	}
	if err := onlyDocument(dec); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if err := emptyItems(&root); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if err := checkTimes(&root); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if err := checkValues(&root, map[*yaml.Node]bool{}); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	// Unknown keys first, each by its line with the keys meant: the strict
	// decoder below would name a Go type instead.
	if unknown := yamlkeys.Check(&root, File{}); len(unknown) > 0 {
		return nil, fmt.Errorf("%s: %w", name, unknownKeys(unknown, ""))
	}
	var f File
	strict := yaml.NewDecoder(bytes.NewReader(data))
	strict.KnownFields(true)
	if err := strict.Decode(&f); err != nil {
		return nil, fmt.Errorf("%s: %w: %v", name, ErrInvalid, err)
	}
	recordLines(&root, &f)
	if err := f.validate(); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return &f, nil
}

// onlyDocument refuses a YAML document after the first (after "---" or
// "..."): the decoder reads one, and what follows would be dropped.
func onlyDocument(dec *yaml.Decoder) error {
	for {
		var next yaml.Node
		err := dec.Decode(&next)
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("%w: a second YAML document follows the first (a campaign file is one document): %s", ErrInvalid, strings.TrimPrefix(err.Error(), "yaml: "))
		}
		if len(next.Content) == 0 || next.Content[0].ShortTag() == "!!null" && next.Content[0].Value == "" {
			continue // a "---" followed by nothing
		}
		return lineErr(next.Line, "a second YAML document starts here: a campaign file is one document (what follows would be dropped)")
	}
}

// checkUTF8 names the line and column of the first byte of text that is
// not UTF-8; first is the line text starts on.
func checkUTF8(text []byte, first int) error {
	if utf8.Valid(text) {
		return nil
	}
	for i := 0; i < len(text); {
		r, n := utf8.DecodeRune(text[i:])
		if r == utf8.RuneError && n <= 1 {
			start := bytes.LastIndexByte(text[:i], '\n') + 1
			return lineErr(first+bytes.Count(text[:i], []byte("\n")), "a byte that is not UTF-8 at column %d (save the file as UTF-8)", i-start+1)
		}
		i += n
	}
	return nil
}

// emptyItems refuses an empty list item ("-" alone, or "- ~") in the
// entities, relationships, sessions and entries lists, which the decoder
// would skip without a word.
func emptyItems(root *yaml.Node) error {
	doc := root
	if doc.Kind == yaml.DocumentNode && len(doc.Content) > 0 {
		doc = doc.Content[0]
	}
	if doc.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(doc.Content); i += 2 {
		switch doc.Content[i].Value {
		case "entities", "relationships", "sessions":
		default:
			continue
		}
		list := doc.Content[i+1]
		if list.Kind != yaml.SequenceNode {
			continue
		}
		if err := emptyItemIn(list.Content); err != nil {
			return err
		}
		if doc.Content[i].Value != "sessions" {
			continue
		}
		for _, s := range list.Content {
			for k := 0; s.Kind == yaml.MappingNode && k+1 < len(s.Content); k += 2 {
				if s.Content[k].Value == "entries" && s.Content[k+1].Kind == yaml.SequenceNode {
					if err := emptyItemIn(s.Content[k+1].Content); err != nil {
						return err
					}
				}
			}
		}
	}
	return nil
}

func emptyItemIn(items []*yaml.Node) error {
	for _, n := range items {
		if n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null" {
			return lineErr(n.Line, "an empty list item (a \"-\" with nothing after it)")
		}
	}
	return nil
}

// timeKeys are the keys whose values must be times.
var timeKeys = map[string]bool{"at": true, "started_at": true, "ended_at": true}

// checkTimes reports, with its line, a time value the decoder would reject
// without saying where.
func checkTimes(n *yaml.Node) error {
	if n.Kind == yaml.MappingNode {
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			if timeKeys[k.Value] && v.Kind == yaml.ScalarNode && v.Tag != "!!null" {
				var t time.Time
				if err := v.Decode(&t); err != nil {
					return lineErr(v.Line, "%s: %q is not a time (write it as RFC 3339, e.g. 2026-03-01T19:00:00Z)", k.Value, v.Value)
				}
			}
		}
	}
	for _, c := range n.Content {
		if err := checkTimes(c); err != nil {
			return err
		}
	}
	return nil
}

// checkValues reports, with its line, a value the store would refuse or
// misread: a NUL character (PostgreSQL text cannot hold it), a "secret"
// marker that is not a boolean (secret: yes would otherwise be public), a
// known_by that is not a list of NPC ids.
func checkValues(n *yaml.Node, seen map[*yaml.Node]bool) error {
	if seen[n] {
		return nil
	}
	seen[n] = true
	if n.Kind == yaml.ScalarNode && strings.ContainsRune(n.Value, 0) {
		return lineErr(n.Line, "a NUL character in %s", q(n.Value))
	}
	if n.Kind == yaml.MappingNode {
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			if v.Kind == yaml.AliasNode && v.Alias != nil {
				v = v.Alias
			}
			switch k.Value {
			case memory.AttrSecret:
				if v.Kind != yaml.ScalarNode || v.ShortTag() != "!!bool" {
					return lineErr(v.Line, "secret must be true or false, got %s (a quoted \"true\", yes or 1 is not a boolean)", q(nodeText(v)))
				}
			case memory.AttrKnownBy:
				ok := v.Kind == yaml.SequenceNode
				for _, x := range v.Content {
					ok = ok && x.Kind == yaml.ScalarNode && x.ShortTag() == "!!str"
				}
				if !ok {
					return lineErr(v.Line, "known_by must be a list of NPC ids, e.g. [elara, grimjaw]")
				}
			}
		}
	}
	for _, c := range n.Content {
		if err := checkValues(c, seen); err != nil {
			return err
		}
	}
	return nil
}

// nodeText is a node's value, or its kind when it is not a scalar.
func nodeText(n *yaml.Node) string {
	switch n.Kind {
	case yaml.ScalarNode:
		return n.Value
	case yaml.SequenceNode:
		return "a list"
	case yaml.MappingNode:
		return "a section"
	}
	return "?"
}

// recordLines copies each list item's line number from the YAML tree.
func recordLines(root *yaml.Node, f *File) {
	doc := root
	if doc.Kind == yaml.DocumentNode && len(doc.Content) > 0 {
		doc = doc.Content[0]
	}
	items := func(key string) []*yaml.Node {
		if doc.Kind != yaml.MappingNode {
			return nil
		}
		for i := 0; i+1 < len(doc.Content); i += 2 {
			if doc.Content[i].Value == key && doc.Content[i+1].Kind == yaml.SequenceNode {
				return doc.Content[i+1].Content
			}
		}
		return nil
	}
	if doc.Kind == yaml.MappingNode {
		for i := 0; i+1 < len(doc.Content); i += 2 {
			if doc.Content[i].Value == "calendar" {
				f.calendarLine = doc.Content[i].Line
			}
			if doc.Content[i].Value == "players" {
				f.playersLine = doc.Content[i].Line
			}
		}
	}
	for i, n := range items("entities") {
		if i < len(f.Entities) {
			f.Entities[i].line = n.Line
		}
	}
	for i, n := range items("relationships") {
		if i < len(f.Relationships) {
			f.Relationships[i].line = n.Line
		}
	}
	for i, n := range items("sessions") {
		if i >= len(f.Sessions) {
			break
		}
		f.Sessions[i].line = n.Line
		if n.Kind != yaml.MappingNode {
			continue
		}
		for k := 0; k+1 < len(n.Content); k += 2 {
			if n.Content[k].Value == "entries" && n.Content[k+1].Kind == yaml.SequenceNode {
				for j, en := range n.Content[k+1].Content {
					if j < len(f.Sessions[i].Entries) {
						f.Sessions[i].Entries[j].line = en.Line
					}
				}
			}
		}
	}
}

// unknownKeys is the error for the unknown keys of a file or a chunk of
// it, one line each. A chunk's items are named item ("entity") instead of
// by their index in the chunk.
func unknownKeys(us []*yamlkeys.UnknownKeyError, item string) error {
	errs := make([]error, len(us))
	for i, u := range us {
		if item != "" && strings.HasPrefix(u.Path, "[") {
			if k := strings.IndexByte(u.Path, ']'); k > 0 {
				u.Path = item + u.Path[k+1:]
			}
		}
		errs[i] = lineErr(u.Line, "%s", u.Detail())
	}
	return errors.Join(errs...)
}

func lineErr(line int, format string, args ...any) error {
	return fmt.Errorf("line %d: %w: %s", line, ErrInvalid, fmt.Sprintf(format, args...))
}

func (f *File) validate() error {
	if err := validCampaign(f.Campaign); err != nil {
		return err
	}
	if msg := languageProblem(f.Language); msg != "" {
		return fmt.Errorf("%w: %s", ErrInvalid, msg)
	}
	if f.Calendar != nil {
		if err := f.Calendar.Validate(); err != nil {
			return lineErr(f.calendarLine, "%v", err)
		}
	}
	v := newValidator()
	for _, e := range f.Entities {
		if err := v.entity(e); err != nil {
			return err
		}
	}
	for i := range f.Sessions {
		s := &f.Sessions[i]
		if err := v.session(s); err != nil {
			return err
		}
		for _, e := range s.Entries {
			if err := v.entry(e); err != nil {
				return err
			}
			if err := entryInSession(s, e); err != nil {
				return err
			}
		}
	}
	for _, r := range f.Relationships {
		if err := v.relationship(r); err != nil {
			return err
		}
	}
	if err := v.finish(); err != nil {
		return err
	}
	if err := checkPlayers(f.Players, v.ents, f.playersLine); err != nil {
		return err
	}
	if err := checkGameDates(f.Calendar, f.Sessions); err != nil {
		return err
	}
	f.Warnings = v.warnings
	return nil
}

// parseCalendar reads the calendar section (its lines, key included)
// that starts on line, naming the file's lines in its errors.
func parseCalendar(text string, line int) (*calendar.Calendar, error) {
	var v struct {
		Calendar *calendar.Calendar `yaml:"calendar"`
	}
	var root yaml.Node
	if err := yaml.Unmarshal([]byte(text), &root); err != nil {
		return nil, lineErr(line, "calendar: %v", err)
	}
	shiftLines(&root, line-1, map[*yaml.Node]bool{})
	if unknown := yamlkeys.Check(&root, v); len(unknown) > 0 {
		return nil, unknownKeys(unknown, "")
	}
	if err := root.Decode(&v); err != nil {
		return nil, lineErr(line, "calendar: %v", err)
	}
	if v.Calendar == nil {
		return nil, nil
	}
	if err := v.Calendar.Validate(); err != nil {
		return nil, lineErr(line, "%v", err)
	}
	return v.Calendar, nil
}

// checkGameDates checks that every session's game_date is a date of the
// file's calendar (any text without a calendar).
func checkGameDates(cal *calendar.Calendar, ss []Session) error {
	if cal == nil {
		return nil
	}
	for _, s := range ss {
		if strings.TrimSpace(s.GameDate) == "" {
			continue
		}
		if _, err := cal.Parse(s.GameDate); err != nil {
			return lineErr(s.line, "session %s: game_date: %v", q(s.ID), err)
		}
	}
	return nil
}

func validCampaign(id string) error {
	if strings.TrimSpace(id) == "" {
		return fmt.Errorf("%w: the key \"campaign\" (the campaign id) is missing", ErrInvalid)
	}
	if err := memory.ValidateCampaignID(id); err != nil {
		return fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	return nil
}

// languageProblem checks the form of a language: a code ("de", "de-AT")
// or a text-search configuration's name ("german"); it says what is wrong,
// or "". Whether the database knows the language is checked when it is
// applied.
func languageProblem(lang string) string {
	ok := len(lang) <= 40
	for _, r := range lang {
		ok = ok && (r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_')
	}
	if !ok {
		return "language " + q(lang) + ": want a language code such as en or de (or a text-search configuration such as german)"
	}
	return ""
}

// validator checks a campaign file item by item, keeping only ids in
// memory, so that a file can be checked while it streams by.
type validator struct {
	known    map[string]bool
	ents     map[string]int // entity id → line
	sessions map[string]int // session id → line
	refs     []ref          // relationship ends, resolved by finish
	warnings []string
}

type ref struct {
	id   string
	line int
}

func newValidator() *validator {
	v := &validator{known: map[string]bool{}, ents: map[string]int{}, sessions: map[string]int{}}
	for _, t := range KnownEntityTypes {
		v.known[t] = true
	}
	return v
}

func (v *validator) entity(e Entity) error {
	switch {
	case strings.TrimSpace(e.ID) == "":
		return lineErr(e.line, "entity without an id")
	case strings.TrimSpace(e.Name) == "":
		return lineErr(e.line, "entity %s has no name", q(e.ID))
	case strings.TrimSpace(e.Type) == "":
		return lineErr(e.line, "entity %s has no type", q(e.ID))
	}
	if prev, ok := v.ents[e.ID]; ok {
		return lineErr(e.line, "entity id %s is already used on line %d", q(e.ID), prev)
	}
	v.ents[e.ID] = e.line
	if !v.known[e.Type] {
		v.warnings = append(v.warnings, fmt.Sprintf("line %d: entity %s has the type %s, which glyphoxa does not know (%s); it is imported as it is",
			e.line, q(e.ID), q(e.Type), strings.Join(KnownEntityTypes, ", ")))
	}
	return nil
}

// session checks a session's own keys (not its entries).
func (v *validator) session(s *Session) error {
	switch {
	case strings.TrimSpace(s.ID) == "":
		return lineErr(s.line, "session without an id")
	case s.StartedAt.IsZero():
		return lineErr(s.line, "session %s has no started_at", q(s.ID))
	case !s.EndedAt.IsZero() && s.EndedAt.Before(s.StartedAt):
		return lineErr(s.line, "session %s ends before it starts", q(s.ID))
	}
	if prev, ok := v.sessions[s.ID]; ok {
		return lineErr(s.line, "session id %s is already used on line %d", q(s.ID), prev)
	}
	v.sessions[s.ID] = s.line
	return nil
}

// entry checks a transcript line on its own (entryInSession checks it
// against its session).
func (v *validator) entry(e Entry) error {
	switch {
	case strings.TrimSpace(e.Text) == "":
		return lineErr(e.line, "transcript entry without text")
	case e.At.IsZero():
		return lineErr(e.line, "transcript entry has no \"at\" time")
	case e.DurationMS < 0:
		return lineErr(e.line, "duration_ms is negative")
	case e.DurationMS > MaxDurationMS:
		return lineErr(e.line, "duration_ms %d is more than a line can last (at most %d, 24 days)", e.DurationMS, MaxDurationMS)
	case e.SpeakerID == "" && e.NPCID == "":
		return lineErr(e.line, "transcript entry needs a speaker_id or an npc_id")
	}
	return nil
}

func entryInSession(s *Session, e Entry) error {
	if e.At.Before(s.StartedAt) {
		return lineErr(e.line, "transcript entry at %s is before its session started (%s)",
			e.At.Format(time.RFC3339), s.StartedAt.Format(time.RFC3339))
	}
	if !s.EndedAt.IsZero() && e.At.After(s.EndedAt) {
		return lineErr(e.line, "transcript entry at %s is after its session ended (%s)",
			e.At.Format(time.RFC3339), s.EndedAt.Format(time.RFC3339))
	}
	return nil
}

// MaxDurationMS is the longest duration_ms a transcript line may have: what
// the store's integer column holds.
const MaxDurationMS = math.MaxInt32

func (v *validator) relationship(r Relationship) error {
	switch {
	case r.Source == "" || r.Target == "":
		return lineErr(r.line, "relationship needs a source and a target")
	case r.Type == "":
		return lineErr(r.line, "relationship %s→%s has no type", q(r.Source), q(r.Target))
	}
	p := r.Provenance
	if p.Confidence != nil && !(*p.Confidence >= 0 && *p.Confidence <= 1) { // NaN too
		return lineErr(r.line, "confidence %v is outside 0..1", *p.Confidence)
	}
	if p.Source != "" && !memory.FactSource(p.Source).Valid() {
		return lineErr(r.line, "provenance source %s must be stated or inferred", q(p.Source))
	}
	v.refs = append(v.refs, ref{r.Source, r.line}, ref{r.Target, r.line})
	return nil
}

// finish checks what needs the whole file: every relationship's ends are
// entities of the file.
func (v *validator) finish() error {
	for _, r := range v.refs {
		if _, ok := v.ents[r.id]; !ok {
			return lineErr(r.line, "relationship refers to entity %s, which the file does not define", q(r.id))
		}
	}
	return nil
}

// Counts says how much a file holds.
type Counts struct {
	Entities, Relationships, Sessions, Entries int
}

// Counts returns the size of the file.
func (f *File) Counts() Counts {
	c := Counts{Entities: len(f.Entities), Relationships: len(f.Relationships), Sessions: len(f.Sessions)}
	for _, s := range f.Sessions {
		c.Entries += len(s.Entries)
	}
	return c
}

// MemoryEntities returns the file's entities as memory entities.
func (f *File) MemoryEntities() []memory.Entity {
	out := make([]memory.Entity, len(f.Entities))
	for i, e := range f.Entities {
		out[i] = memory.Entity{ID: e.ID, Type: e.Type, Name: e.Name, Aliases: e.Aliases, Attributes: e.Attributes}
	}
	return out
}

// Applied reports what applying a file changed.
type Applied struct {
	Entities      int
	Relationships int
	Sessions      int
	// NewEntries is the number of transcript entries not imported before.
	NewEntries int
}

// factWriter is the optional capability of a knowledge graph that keeps the
// history of facts (postgres.Graph.WriteFact).
type factWriter interface {
	WriteFact(ctx context.Context, w memory.Writer, r memory.Relationship, reason string) (memory.FactWrite, error)
}

// Apply writes the file into a campaign's session log and knowledge graph.
// Run it inside one transaction (postgres.Store.InTx) so that a failure
// writes nothing. Applying the same file twice changes nothing.
func (f *File) Apply(ctx context.Context, l1 memory.SessionStore, g memory.KnowledgeGraph) (Applied, error) {
	var a Applied
	if err := applyCalendar(ctx, l1, f.Calendar); err != nil {
		return a, err
	}
	if err := g.UpsertEntities(ctx, f.MemoryEntities()); err != nil {
		return a, fmt.Errorf("importing entities: %w", err)
	}
	a.Entities = len(f.Entities)
	starts := map[string]time.Time{}
	for _, s := range f.Sessions {
		starts[s.ID] = s.StartedAt
	}
	// Sessions first, so the fact timeline can order facts by session, and
	// the facts in the order of their sessions (facts outside play first).
	for _, s := range f.Sessions {
		if err := recordSession(ctx, l1, s); err != nil {
			return a, err
		}
	}
	n, err := f.applyRelationships(ctx, g, starts)
	a.Relationships = n
	if err != nil {
		return a, err
	}
	for _, s := range f.Sessions {
		n, err := writeEntries(ctx, l1, s, s.Entries)
		if err != nil {
			return a, err
		}
		a.Sessions++
		a.NewEntries += n
	}
	if err := applyPlayers(ctx, l1, f.Players); err != nil {
		return a, err
	}
	return a, nil
}

// recordSession records a session: its start, its end when it has one,
// and its in-game date when the store keeps them.
func recordSession(ctx context.Context, l1 memory.SessionStore, s Session) error {
	if err := l1.StartSession(ctx, s.ID, s.StartedAt); err != nil {
		return fmt.Errorf("line %d: %w", s.line, err)
	}
	if !s.EndedAt.IsZero() {
		if err := l1.EndSession(ctx, s.ID, s.EndedAt); err != nil {
			return fmt.Errorf("line %d: %w", s.line, err)
		}
	}
	if gd, ok := l1.(gameDater); ok && s.GameDate != "" {
		if err := gd.SetGameDate(ctx, s.ID, s.GameDate); err != nil {
			return fmt.Errorf("line %d: %w", s.line, err)
		}
	}
	return nil
}

// applyRelationships writes the file's relationships, in the order of their
// sessions, through the fact timeline when the graph keeps one; starts
// gives a session's start for facts without a time (nil: they get the
// import time).
func (f *File) applyRelationships(ctx context.Context, g memory.KnowledgeGraph, starts map[string]time.Time) (int, error) {
	n := 0
	rels := slices.Clone(f.Relationships)
	slices.SortStableFunc(rels, func(x, y Relationship) int {
		return starts[x.Provenance.Session].Compare(starts[y.Provenance.Session])
	})
	for _, r := range rels {
		conf := 1.0
		if r.Provenance.Confidence != nil {
			conf = *r.Provenance.Confidence
		}
		at := r.Provenance.At
		if at.IsZero() {
			at = starts[r.Provenance.Session]
		}
		rel := memory.Relationship{
			SourceID: r.Source, TargetID: r.Target, Type: r.Type, Attributes: r.Attributes,
			Provenance: memory.Provenance{SessionID: r.Provenance.Session, Timestamp: at, Confidence: conf,
				Source: memory.FactSource(r.Provenance.Source), DMConfirmed: r.Provenance.DMConfirmed},
		}
		var err error
		if fw, ok := g.(factWriter); ok {
			// Through the fact timeline: a fact of a later session
			// supersedes the one it replaces, a contradiction waits for the
			// DM, nothing is overwritten.
			_, err = fw.WriteFact(ctx, memory.Writer{Role: memory.WriterImport}, rel, "")
		} else {
			_, err = g.UpsertRelationship(ctx, rel)
		}
		if err != nil {
			return n, fmt.Errorf("line %d: importing relationship %s -%s-> %s: %w", r.line, q(r.Source), q(r.Type), q(r.Target), err)
		}
		n++
	}
	return n, nil
}

// writeEntries writes transcript lines of session s.
func writeEntries(ctx context.Context, l1 memory.SessionStore, s Session, entries []Entry) (int, error) {
	es := make([]memory.TranscriptEntry, len(entries))
	for i, e := range entries {
		raw := e.RawText
		if raw == "" {
			raw = e.Text
		}
		speaker := e.SpeakerID
		if speaker == "" {
			speaker = e.NPCID
		}
		es[i] = memory.TranscriptEntry{SessionID: s.ID, SpeakerID: speaker, SpeakerName: e.SpeakerName, NPCID: e.NPCID,
			Text: e.Text, RawText: raw, At: e.At, Duration: time.Duration(e.DurationMS) * time.Millisecond,
			IdempotencyKey: entryKey(s.ID, e)}
	}
	n, err := l1.WriteEntries(ctx, es)
	if err != nil {
		line := s.line
		if len(entries) > 0 {
			line = entries[0].line
		}
		return n, fmt.Errorf("line %d: importing the transcript of session %s: %w", line, q(s.ID), err)
	}
	return n, nil
}

// calendarSetter is a session store that keeps the campaign's calendar
// (the PostgreSQL store does).
type calendarSetter interface {
	SetCalendar(ctx context.Context, c *calendar.Calendar) error
}

// applyCalendar stores a file's calendar before its sessions' game dates
// (a file without one leaves the campaign's calendar as it is).
func applyCalendar(ctx context.Context, l1 memory.SessionStore, c *calendar.Calendar) error {
	cs, ok := l1.(calendarSetter)
	if !ok || c == nil {
		return nil
	}
	if err := cs.SetCalendar(ctx, c); err != nil {
		return fmt.Errorf("importing the calendar: %w", err)
	}
	return nil
}

// gameDater is a session store that records sessions' in-game dates
// (the PostgreSQL store does).
type gameDater interface {
	SetGameDate(ctx context.Context, id, gameDate string) error
}

// entryKey identifies an imported line so that re-imports skip it.
func entryKey(session string, e Entry) string {
	if e.ID != "" {
		return "import:" + session + ":" + e.ID
	}
	h := sha256.New()
	for _, p := range []string{session, e.SpeakerID, e.NPCID, e.At.UTC().Format(time.RFC3339Nano), e.Text} {
		h.Write([]byte(p))
		h.Write([]byte{0})
	}
	return "import:" + hex.EncodeToString(h.Sum(nil)[:16])
}
