package campaignfile

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/glyphoxa/glyphoxa/internal/yamlkeys"

	"github.com/glyphoxa/glyphoxa/memory"
	"github.com/glyphoxa/glyphoxa/memory/calendar"
)

// Streaming
//
// A campaign file can be far larger than what should sit in memory (a
// campaign's whole transcript). [Check] and [Summary.Apply] read it as a
// stream instead: the file's block layout (the one the README shows) is cut
// at list items, and each batch of up to [BatchItems] items is parsed on its
// own, with its line numbers kept. Check keeps only ids and session headers;
// Apply (the second pass over the same file) writes batch by batch. A file
// in another layout (the whole document in flow style, say) is parsed whole
// when it is at most [MaxWholeBytes], and refused otherwise.

// BatchItems is the number of list items parsed and written together,
// unless [Options.BatchItems] says otherwise.
const BatchItems = 1000

// MaxWholeBytes is the largest file parsed as one document when its layout
// cannot be streamed.
const MaxWholeBytes = 32 << 20

// errLayout reports a layout the streaming reader does not cut; the file is
// then parsed whole.
var errLayout = errors.New("layout not streamable")

// chunkKind says what a chunk holds.
type chunkKind int

const (
	chunkEntities chunkKind = iota + 1
	chunkRelationships
	chunkEntries        // entries of session item chunk.session
	chunkSessionHeader  // a session item without its entries
	chunkSessionsInline // a whole "sessions:" section in flow style
	chunkInline         // "entities: [...]" or "relationships: [...]"
)

// item names one item of a chunk of kind k in errors: a chunk's items are
// numbered from its start, not the file's, so errors name the item's kind
// (and line) instead of an index.
func (k chunkKind) item() string {
	switch k {
	case chunkEntities:
		return "entity"
	case chunkRelationships:
		return "relationship"
	case chunkEntries:
		return "transcript entry"
	case chunkSessionHeader:
		return "session"
	}
	return ""
}

// chunk is a run of whole lines of the file.
type chunk struct {
	kind    chunkKind
	key     string // for chunkInline and chunkSessionsInline
	line    int    // the line of its first byte
	text    []byte
	session int // index of the session item, for entries and headers
}

// splitter cuts a campaign file into chunks.
type splitter struct {
	r      *bufio.Reader
	batch  int // items a batch holds at most
	line   int
	read   int64
	emit   func(chunk) error
	onKeys func(key, value string, line int) error

	section   string // top-level key whose value is being read
	itemInd   int    // indentation of the section's "- ", -1 before the first
	buf       bytes.Buffer
	bufLine   int
	bufItems  int
	keysSeen  map[string]int
	inlineKey string
	// calendar holds the calendar section's lines, handed to onKeys whole.
	calendar     bytes.Buffer
	calendarLine int
	// players holds the players section's lines, handed to onKeys whole.
	players     bytes.Buffer
	playersLine int

	// Within a session item.
	sessIdx    int // 1 + index of the session item being read
	header     bytes.Buffer
	headerLine int
	keyInd     int  // indentation of the session item's keys
	inEntries  bool // reading the entries block
	entryInd   int  // indentation of the entries' "- ", -1 before the first
	expectKeys bool // the line after "entries:" decides where entries sit
}

var topKeys = map[string]bool{"campaign": true, "language": true, "calendar": true, "players": true, "entities": true,
	"relationships": true, "sessions": true}

func indentOf(l []byte) int {
	n := 0
	for n < len(l) && l[n] == ' ' {
		n++
	}
	return n
}

func blankOrComment(l []byte) bool {
	t := bytes.TrimSpace(l)
	return len(t) == 0 || t[0] == '#'
}

// isItem reports whether l holds a list item ("- ..." or "-") at ind.
func isItem(l []byte, ind int) bool {
	if len(l) <= ind || l[ind] != '-' {
		return false
	}
	return len(l) == ind+1 || l[ind+1] == ' ' || l[ind+1] == '\n' || l[ind+1] == '\r'
}

// run reads the whole file, emitting chunks in file order.
func (s *splitter) run() error {
	s.itemInd = -1
	s.keysSeen = map[string]int{}
	for {
		l, err := s.r.ReadBytes('\n')
		if len(l) > 0 {
			s.line++
			s.read += int64(len(l))
			if i := bytes.IndexByte(l, 0); i >= 0 {
				return lineErr(s.line, "a NUL byte at column %d (a campaign file is text)", i+1)
			}
			if err := checkUTF8(l, s.line); err != nil {
				return err
			}
			if err := s.feed(l); err != nil {
				return err
			}
		}
		if errors.Is(err, io.EOF) {
			return s.flushSection()
		}
		if err != nil {
			return fmt.Errorf("reading line %d: %w", s.line+1, err)
		}
	}
}

func (s *splitter) feed(l []byte) error {
	if s.line == 1 && bytes.HasPrefix(l, []byte("\xef\xbb\xbf")) {
		l = l[3:]
	}
	ind := indentOf(l)
	if ind < len(l) && l[ind] == '\t' {
		return errLayout
	}
	if s.inlineKey != "" {
		// A flow-style section value continues on indented lines.
		if blankOrComment(l) || ind > 0 {
			s.buf.Write(l)
			return nil
		}
		if err := s.flushSection(); err != nil {
			return err
		}
	}
	if blankOrComment(l) {
		return s.appendLine(l, true)
	}
	if ind == 0 && !isItem(l, 0) {
		t := bytes.TrimRight(l, "\r\n")
		if bytes.Equal(t, []byte("---")) && s.line == 1 {
			return nil
		}
		if err := s.flushSection(); err != nil {
			return err
		}
		return s.topLevel(l)
	}
	if s.section == "calendar" {
		s.calendar.Write(l)
		return nil
	}
	if s.section == "players" {
		s.players.Write(l)
		return nil
	}
	switch s.section {
	case "entities", "relationships", "sessions":
	default:
		return errLayout
	}
	if s.itemInd < 0 {
		if !isItem(l, ind) {
			return errLayout
		}
		s.itemInd = ind
	}
	switch {
	case ind == s.itemInd && isItem(l, ind):
		if err := s.newItem(l); err != nil {
			return err
		}
	case ind > s.itemInd:
		// Its error is a batch's: an entries block flushed here (by a
		// key of its session after it, or a full batch) and refused.
		if err := s.appendLine(l, false); err != nil {
			return err
		}
	default:
		return errLayout
	}
	return nil
}

// topLevel handles a "key: value" line at column 0.
func (s *splitter) topLevel(l []byte) error {
	k, v, ok := bytes.Cut(bytes.TrimRight(l, "\r\n"), []byte(":"))
	key := string(bytes.TrimSpace(k))
	if !ok || !topKeys[key] {
		if !ok || strings.ContainsAny(key, "{}[]\"'&*!|>%@`") {
			return errLayout
		}
		return lineErr(s.line, "unknown key %s (a campaign file has campaign, language, calendar, players, entities, relationships and sessions)", q(key))
	}
	if prev, dup := s.keysSeen[key]; dup {
		return lineErr(s.line, "the key %q is already used on line %d", key, prev)
	}
	s.keysSeen[key] = s.line
	value := string(bytes.TrimSpace(v))
	if i := strings.Index(value, " #"); i >= 0 && !strings.ContainsAny(value, "\"'") {
		value = strings.TrimSpace(value[:i])
	}
	s.section, s.itemInd = key, -1
	if key == "calendar" {
		s.calendar.Reset()
		s.calendar.Write(l)
		s.calendarLine = s.line
		return nil
	}
	if key == "players" {
		s.players.Reset()
		s.players.Write(l)
		s.playersLine = s.line
		return nil
	}
	if key == "campaign" || key == "language" {
		var c map[string]string
		if err := yaml.Unmarshal(l, &c); err != nil {
			return errLayout
		}
		if _, ok := c[key]; !ok || len(c) != 1 {
			// "language:: de" is the key "language:" to YAML: the whole
			// parser names it.
			return errLayout
		}
		return s.onKeys(key, c[key], s.line)
	}
	if value != "" && value != "~" && value != "null" {
		// A flow-style value: the section is one chunk.
		s.inlineKey = key
		s.buf.Reset()
		s.bufLine = s.line
		s.buf.Write(l)
	}
	return nil
}

// appendLine adds a line to the item being read.
func (s *splitter) appendLine(l []byte, blank bool) error {
	if s.section == "sessions" && s.sessIdx > 0 {
		return s.sessionLine(l, blank)
	}
	if s.bufItems > 0 {
		s.buf.Write(l)
	}
	return nil
}

// newItem starts a list item.
func (s *splitter) newItem(l []byte) error {
	if s.section == "sessions" {
		if err := s.endSession(); err != nil {
			return err
		}
		s.sessIdx++
		s.header.Reset()
		s.headerLine = s.line
		s.inEntries, s.expectKeys = false, false
		s.keyInd = s.itemInd + 1 + indentOf(l[s.itemInd+1:])
		s.headerKeyLine(l)
		return nil
	}
	if s.bufItems == s.batch {
		if err := s.flushItems(); err != nil {
			return err
		}
	}
	s.startItem(l)
	return nil
}

func (s *splitter) startItem(l []byte) {
	if s.bufItems == 0 {
		s.buf.Reset()
		s.bufLine = s.line
	}
	s.buf.Write(l)
	s.bufItems++
}

// headerKeyLine adds a line of the session's own keys to its header and
// notes an "entries:" key whose items follow on the next lines.
func (s *splitter) headerKeyLine(l []byte) {
	s.header.Write(l)
	t := bytes.TrimSpace(l)
	t = bytes.TrimPrefix(t, []byte("- "))
	if k, v, ok := bytes.Cut(t, []byte(":")); ok && string(bytes.TrimSpace(k)) == "entries" {
		if v = bytes.TrimSpace(v); len(v) == 0 || v[0] == '#' {
			s.expectKeys, s.entryInd = true, -1
		}
	}
}

// sessionLine routes a line of a session item: to the entries block or to
// the header (where an entries line leaves an empty line, so the header's
// line numbers stay those of the file).
func (s *splitter) sessionLine(l []byte, blank bool) error {
	ind := indentOf(l)
	if s.expectKeys && !blank {
		s.expectKeys = false
		if isItem(l, ind) && ind >= s.keyInd {
			s.inEntries, s.entryInd = true, ind
		}
	}
	if s.inEntries {
		switch {
		case blank:
			s.header.WriteByte('\n')
			if s.bufItems > 0 {
				s.buf.Write(l)
			}
			return nil
		case ind == s.entryInd && isItem(l, ind):
			if s.bufItems == s.batch {
				if err := s.flushEntries(); err != nil {
					return err
				}
			}
			s.startItem(l)
			s.header.WriteByte('\n')
			return nil
		case ind > s.entryInd:
			s.buf.Write(l)
			s.header.WriteByte('\n')
			return nil
		}
		s.inEntries = false
		if err := s.flushEntries(); err != nil {
			return err
		}
	}
	s.headerKeyLine(l)
	return nil
}

func (s *splitter) flushItems() error {
	if s.bufItems == 0 {
		return nil
	}
	kind := chunkEntities
	if s.section == "relationships" {
		kind = chunkRelationships
	}
	c := chunk{kind: kind, line: s.bufLine, text: bytes.Clone(s.buf.Bytes())}
	s.bufItems = 0
	s.buf.Reset()
	return s.emit(c)
}

func (s *splitter) flushEntries() error {
	if s.bufItems == 0 {
		return nil
	}
	c := chunk{kind: chunkEntries, line: s.bufLine, text: bytes.Clone(s.buf.Bytes()), session: s.sessIdx - 1}
	s.bufItems = 0
	s.buf.Reset()
	return s.emit(c)
}

// endSession emits the session item being read: its last entries, then its
// header.
func (s *splitter) endSession() error {
	if s.sessIdx == 0 || s.header.Len() == 0 {
		return nil
	}
	if err := s.flushEntries(); err != nil {
		return err
	}
	s.inEntries = false
	c := chunk{kind: chunkSessionHeader, line: s.headerLine, text: bytes.Clone(s.header.Bytes()), session: s.sessIdx - 1}
	s.header.Reset()
	return s.emit(c)
}

// flushSection ends the top-level section being read.
func (s *splitter) flushSection() error {
	if s.inlineKey != "" {
		kind := chunkInline
		if s.inlineKey == "sessions" {
			kind = chunkSessionsInline
		}
		c := chunk{kind: kind, key: s.inlineKey, line: s.bufLine, text: bytes.Clone(s.buf.Bytes())}
		s.inlineKey = ""
		s.buf.Reset()
		return s.emit(c)
	}
	switch s.section {
	case "entities", "relationships":
		return s.flushItems()
	case "sessions":
		return s.endSession()
	case "calendar":
		s.section = ""
		return s.onKeys("calendar", s.calendar.String(), s.calendarLine)
	case "players":
		s.section = ""
		return s.onKeys("players", s.players.String(), s.playersLine)
	}
	return nil
}

// yamlLine finds the line numbers in the YAML parser's messages.
var yamlLine = regexp.MustCompile(`line (\d+)`)

// decodeChunk parses a chunk strictly into v, with nodes and messages
// numbered as in the file. It returns the parsed tree.
func decodeChunk(c chunk, v any) (*yaml.Node, error) {
	shift := c.line - 1
	fix := func(err error) error {
		msg := yamlLine.ReplaceAllStringFunc(strings.TrimPrefix(err.Error(), "yaml: "), func(m string) string {
			n, _ := strconv.Atoi(m[5:])
			return "line " + strconv.Itoa(n+shift)
		})
		return fmt.Errorf("%w: %s", ErrInvalid, msg)
	}
	var root yaml.Node
	if err := yaml.NewDecoder(bytes.NewReader(c.text)).Decode(&root); err != nil {
		if strings.Contains(err.Error(), "unknown anchor") {
			// An alias to an anchor of an earlier batch: only the whole
			// document resolves it.
			return nil, errLayout
		}
		return nil, fix(err)
	}
	shiftLines(&root, shift, map[*yaml.Node]bool{})
	if c.kind != chunkInline && c.kind != chunkSessionsInline {
		if err := emptyItemIn(itemNodes(&root)); err != nil {
			return nil, err
		}
	} else if err := emptyItems(&root); err != nil {
		return nil, err
	}
	if err := checkTimes(&root); err != nil {
		return nil, err
	}
	if err := checkValues(&root, map[*yaml.Node]bool{}); err != nil {
		return nil, err
	}
	if unknown := yamlkeys.Check(&root, v); len(unknown) > 0 {
		return nil, unknownKeys(unknown, c.kind.item())
	}
	dec := yaml.NewDecoder(bytes.NewReader(c.text))
	dec.KnownFields(true)
	if err := dec.Decode(v); err != nil {
		return nil, fix(err)
	}
	return &root, nil
}

func shiftLines(n *yaml.Node, by int, seen map[*yaml.Node]bool) {
	if seen[n] {
		return
	}
	seen[n] = true
	n.Line += by
	for _, c := range n.Content {
		shiftLines(c, by, seen)
	}
}

// itemNodes returns the items of a chunk's top sequence.
func itemNodes(root *yaml.Node) []*yaml.Node {
	n := root
	if n.Kind == yaml.DocumentNode && len(n.Content) > 0 {
		n = n.Content[0]
	}
	if n.Kind != yaml.SequenceNode {
		return nil
	}
	return n.Content
}

// Summary is what [Check] learnt of a campaign file: enough to apply it
// in a second pass.
type Summary struct {
	Campaign string
	// Language is the file's language key ([File.Language]).
	Language string
	// Calendar is the file's calendar key ([File.Calendar]), nil without one.
	Calendar *calendar.Calendar
	// Players is the file's players key ([File.Players]).
	Players     Players
	playersLine int
	Counts      Counts
	// Warnings name their lines (see File.Warnings).
	Warnings []string
	// sessions are the session items' own keys, by position.
	sessions []Session
	// whole is the parsed file when its layout could not be streamed.
	whole *File
}

// SessionIDs are the ids of the file's sessions, in file order.
func (sum *Summary) SessionIDs() []string {
	if sum.whole != nil {
		ids := make([]string, len(sum.whole.Sessions))
		for i, s := range sum.whole.Sessions {
			ids[i] = s.ID
		}
		return ids
	}
	ids := make([]string, len(sum.sessions))
	for i, s := range sum.sessions {
		ids[i] = s.ID
	}
	return ids
}

// Progress reports how far a pass over the file has come.
type Progress struct {
	// Bytes read of Total (Total is 0 when unknown).
	Bytes, Total                     int64
	Entities, Relationships, Entries int
}

// Options adjust Check and Apply.
type Options struct {
	// Size is the file's size, for progress (0 if unknown).
	Size int64
	// Progress, when set, is called after every batch.
	Progress func(Progress)
	// BatchTimeout bounds the writing of one batch (default 2 minutes).
	BatchTimeout time.Duration
	// BatchItems is the number of list items parsed and written together
	// (default [BatchItems]): what a batch costs in memory and in one
	// write. It changes nothing in what is stored.
	BatchItems int
}

// batchItems is o.BatchItems or its default.
func (o Options) batchItems() int {
	if o.BatchItems > 0 {
		return o.BatchItems
	}
	return BatchItems
}

// pass reads the file once, handing each parsed batch to fn.
type batch struct {
	entities []Entity
	rels     []Relationship
	entries  []Entry
	session  int      // for entries and header
	header   *Session // a session item's own keys
	inline   []Session
}

func pass(r io.Reader, o Options, onKeys func(key, value string, line int) error, fn func(batch) error) error {
	sp := &splitter{r: bufio.NewReaderSize(r, 1<<16), batch: o.batchItems()}
	sp.onKeys = onKeys
	sp.emit = func(c chunk) error {
		b, err := parseChunk(c)
		if err != nil {
			return err
		}
		return fn(b)
	}
	return sp.run()
}

func parseChunk(c chunk) (batch, error) {
	b := batch{session: c.session}
	switch c.kind {
	case chunkEntities:
		root, err := decodeChunk(c, &b.entities)
		if err != nil {
			return b, err
		}
		for i, n := range itemNodes(root) {
			if i < len(b.entities) {
				b.entities[i].line = n.Line
			}
		}
	case chunkRelationships:
		root, err := decodeChunk(c, &b.rels)
		if err != nil {
			return b, err
		}
		for i, n := range itemNodes(root) {
			if i < len(b.rels) {
				b.rels[i].line = n.Line
			}
		}
	case chunkEntries:
		root, err := decodeChunk(c, &b.entries)
		if err != nil {
			return b, err
		}
		for i, n := range itemNodes(root) {
			if i < len(b.entries) {
				b.entries[i].line = n.Line
			}
		}
	case chunkSessionHeader:
		var ss []Session
		root, err := decodeChunk(c, &ss)
		if err != nil {
			return b, err
		}
		if len(ss) != 1 {
			return b, lineErr(c.line, "expected one session")
		}
		ss[0].line = c.line
		if items := itemNodes(root); len(items) == 1 {
			ss[0].line = items[0].Line
		}
		b.header = &ss[0]
	case chunkInline, chunkSessionsInline:
		var f File
		root, err := decodeChunk(c, &f)
		if err != nil {
			return b, err
		}
		recordLines(root, &f)
		b.entities, b.rels, b.inline = f.Entities, f.Relationships, f.Sessions
	}
	return b, nil
}

// Check validates a campaign file read from r, as [Parse] does, but as a
// stream: memory holds the ids and one batch, not the file. Apply the
// returned summary with the same file read again.
func Check(r io.Reader, name string, o Options) (*Summary, error) {
	sum := &Summary{}
	v := newValidator()
	type pendingSession struct {
		minAt, maxAt     time.Time
		minLine, maxLine int
	}
	var cur pendingSession
	var prog Progress
	campaignLine := 0
	counter := &countingReader{r: r}
	r = counter
	var buf *bytes.Buffer
	if o.Size == 0 || o.Size <= MaxWholeBytes {
		// Kept in case the layout needs the whole-document parser.
		buf = &bytes.Buffer{}
		r = io.TeeReader(r, buf)
	}
	err := pass(r, o, func(key, value string, line int) error {
		if key == "players" {
			p, err := parsePlayers(value, line)
			if err != nil {
				return err
			}
			sum.Players, sum.playersLine = p, line
			return nil
		}
		if key == "calendar" {
			c, err := parseCalendar(value, line)
			if err != nil {
				return err
			}
			sum.Calendar = c
			return nil
		}
		if key == "language" {
			if msg := languageProblem(value); msg != "" {
				return lineErr(line, "%s", msg)
			}
			sum.Language = value
			return nil
		}
		sum.Campaign, campaignLine = value, line
		return nil
	}, func(b batch) error {
		for _, e := range b.entities {
			if err := v.entity(e); err != nil {
				return err
			}
		}
		for _, rel := range b.rels {
			if err := v.relationship(rel); err != nil {
				return err
			}
		}
		for _, e := range b.entries {
			if err := v.entry(e); err != nil {
				return err
			}
			if cur.minLine == 0 || e.At.Before(cur.minAt) {
				cur.minAt, cur.minLine = e.At, e.line
			}
			if cur.maxLine == 0 || e.At.After(cur.maxAt) {
				cur.maxAt, cur.maxLine = e.At, e.line
			}
		}
		sum.Counts.Entities += len(b.entities)
		sum.Counts.Relationships += len(b.rels)
		sum.Counts.Entries += len(b.entries)
		for i := range b.inline {
			s := &b.inline[i]
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
			sum.Counts.Sessions++
			sum.Counts.Entries += len(s.Entries)
			sum.sessions = append(sum.sessions, *s)
		}
		if h := b.header; h != nil {
			if err := v.session(h); err != nil {
				return err
			}
			if cur.minLine != 0 && cur.minAt.Before(h.StartedAt) {
				return entryInSession(h, Entry{At: cur.minAt, line: cur.minLine})
			}
			if cur.maxLine != 0 && !h.EndedAt.IsZero() && cur.maxAt.After(h.EndedAt) {
				return entryInSession(h, Entry{At: cur.maxAt, line: cur.maxLine})
			}
			for _, e := range h.Entries { // entries written in flow style
				if err := v.entry(e); err != nil {
					return err
				}
				if err := entryInSession(h, e); err != nil {
					return err
				}
			}
			sum.Counts.Entries += len(h.Entries)
			cur = pendingSession{}
			sum.Counts.Sessions++
			sum.sessions = append(sum.sessions, *h)
		}
		if o.Progress != nil {
			prog.Entities, prog.Relationships, prog.Entries = sum.Counts.Entities, sum.Counts.Relationships, sum.Counts.Entries
			prog.Bytes, prog.Total = counter.n, o.Size
			o.Progress(prog)
		}
		return nil
	})
	if errors.Is(err, errLayout) {
		if buf == nil {
			return nil, fmt.Errorf("%s: %w: a file over %d MB must use the block layout of the README (one list item per '- ' line, no flow-style sections)",
				name, ErrInvalid, MaxWholeBytes>>20)
		}
		if _, err := io.Copy(io.Discard, r); err != nil {
			return nil, fmt.Errorf("reading %s: %w", name, err)
		}
		f, err := Parse(buf, name)
		if err != nil {
			return nil, err
		}
		return &Summary{Campaign: f.Campaign, Language: f.Language, Calendar: f.Calendar, Counts: f.Counts(), Warnings: f.Warnings, whole: f}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if counter.n == 0 {
		return nil, fmt.Errorf("%s: %w: the file is empty", name, ErrInvalid)
	}
	if err := validCampaign(sum.Campaign); err != nil {
		if campaignLine > 0 {
			return nil, fmt.Errorf("%s: line %d: %w", name, campaignLine, err)
		}
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if err := v.finish(); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if err := checkPlayers(sum.Players, v.ents, sum.playersLine); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if err := checkGameDates(sum.Calendar, sum.sessions); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	sum.Warnings = v.warnings
	return sum, nil
}

// Apply writes a checked file, read again from r, into a campaign's memory
// batch by batch. Run it inside one transaction (postgres.Store.InTx) so
// that a failure writes nothing. Each batch must be written within
// o.BatchTimeout.
func (sum *Summary) Apply(ctx context.Context, r io.Reader, l1 memory.SessionStore, g memory.KnowledgeGraph, o Options) (Applied, error) {
	if sum.whole != nil {
		return sum.whole.Apply(ctx, l1, g)
	}
	if err := applyCalendar(ctx, l1, sum.Calendar); err != nil {
		return Applied{}, err
	}
	if o.BatchTimeout <= 0 {
		o.BatchTimeout = 2 * time.Minute
	}
	var a Applied
	var prog Progress
	counter := &countingReader{r: r}
	started := map[int]bool{}
	startSession := func(ctx context.Context, i int) error {
		if started[i] || i >= len(sum.sessions) {
			return nil
		}
		started[i] = true
		if err := recordSession(ctx, l1, sum.sessions[i]); err != nil {
			return err
		}
		a.Sessions++
		return nil
	}
	// Sessions first, as in File.Apply: the fact timeline orders facts by
	// their sessions' starts.
	starts := map[string]time.Time{}
	for i, s := range sum.sessions {
		starts[s.ID] = s.StartedAt
		if err := startSession(ctx, i); err != nil {
			return a, err
		}
	}
	sessionIdx := 0
	err := pass(counter, o, func(string, string, int) error { return nil }, func(b batch) error {
		bctx, cancel := context.WithTimeout(ctx, o.BatchTimeout)
		defer cancel()
		f := File{Entities: b.entities, Relationships: b.rels}
		if len(b.entities) > 0 {
			if err := g.UpsertEntities(bctx, f.MemoryEntities()); err != nil {
				return batchErr(bctx, fmt.Errorf("line %d: importing entities: %w", b.entities[0].line, err), o.BatchTimeout, o.batchItems())
			}
			a.Entities += len(b.entities)
		}
		if len(b.rels) > 0 {
			n, err := f.applyRelationships(bctx, g, starts)
			a.Relationships += n
			if err != nil {
				return batchErr(bctx, err, o.BatchTimeout, o.batchItems())
			}
		}
		for _, s := range b.inline {
			if err := startSession(bctx, sessionIdx); err != nil {
				return err
			}
			n, err := writeEntries(bctx, l1, s, s.Entries)
			if err != nil {
				return batchErr(bctx, err, o.BatchTimeout, o.batchItems())
			}
			a.NewEntries += n
			sessionIdx++
		}
		if len(b.entries) > 0 || b.header != nil {
			if err := startSession(bctx, b.session); err != nil {
				return batchErr(bctx, err, o.BatchTimeout, o.batchItems())
			}
			s := sum.sessions[b.session]
			entries := b.entries
			if b.header != nil {
				entries = append(entries, b.header.Entries...)
				sessionIdx = b.session + 1
			}
			n, err := writeEntries(bctx, l1, s, entries)
			if err != nil {
				return batchErr(bctx, err, o.BatchTimeout, o.batchItems())
			}
			a.NewEntries += n
			prog.Entries += len(entries)
		}
		if o.Progress != nil {
			prog.Bytes, prog.Total = counter.n, o.Size
			prog.Entities, prog.Relationships = a.Entities, a.Relationships
			o.Progress(prog)
		}
		return nil
	})
	if err != nil {
		return a, err
	}
	if err := applyPlayers(ctx, l1, sum.Players); err != nil {
		return a, err
	}
	return a, nil
}

// batchErr names a batch that ran out of time.
func batchErr(ctx context.Context, err error, limit time.Duration, items int) error {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return fmt.Errorf("a batch of at most %d items took longer than %s (nothing was imported): %w", items, limit, err)
	}
	return err
}

type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}
