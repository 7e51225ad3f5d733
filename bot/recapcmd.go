package bot

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/bwmarrin/discordgo"

	"github.com/glyphoxa/glyphoxa/bot/recap"
	"github.com/glyphoxa/glyphoxa/memory"
	memaccess "github.com/glyphoxa/glyphoxa/memory/access"
)

// maxRecapLines bounds the transcript handed to one recap.
const maxRecapLines = 600

// maxRecapFacts bounds the facts of one session a recap is given; beyond it
// the recap is told how many were left out.
const maxRecapFacts = 500

func (b *Bot) recapCommand(ctx context.Context, i *discordgo.Interaction, g Guild, c command) {
	if c.str("for") == "me" {
		b.recapForMe(ctx, i, g)
		return
	}
	dm := isDM(g, i.Member)
	safe, set := c.boolean("player_safe")
	if !dm || !set {
		safe = !dm || safe
	}
	delivery := c.str("delivery")
	if delivery == "" {
		delivery = "private"
	}
	if delivery == "voice" && !dm {
		b.refuse(i, "Only the DM can have the narrator speak a recap.")
		return
	}
	if (delivery == "public" || delivery == "voice") && !safe {
		// A recap posted in the channel or spoken in the voice channel
		// reaches the players: it is always player-safe (read as any
		// player: no secret, no split scene).
		safe = true
	}
	if !b.deferReply(i, delivery != "public") {
		return
	}
	// A player's recap reads through a player's handle: the store leaves
	// out in SQL what players may not see.
	camp, err := b.campaignFor(ctx, g, i)
	if err != nil {
		b.finishErr(i, err)
		return
	}
	// The local check of a player-safe recap compares what the DM and the
	// players see: the bot opens the DM's handle for it, and no secret
	// leaves the server (the model gets the player's view only).
	dmCamp := camp
	if !camp.DM() {
		if dmCamp, _, err = b.campaign(ctx, g.ID, memory.DMViewer()); err != nil {
			b.finishErr(i, err)
			return
		}
	}
	// A player-safe recap is the party's, whoever asks and wherever it is
	// posted: it reads as any player (memory.PlayerViewer), so no line of a
	// split scene reaches it, not even one the asker witnessed (their own
	// is /recap for:me). The DM's own recap (player_safe:false) reads
	// everything.
	if safe {
		if camp, _, err = b.campaign(ctx, g.ID, memory.PlayerViewer()); err != nil {
			b.finishErr(i, err)
			return
		}
	}
	scope := c.str("scope")
	sessions, err := b.recapSessions(ctx, camp, scope, c.str("session"))
	if err != nil {
		b.finishErr(i, err)
		return
	}
	w := recap.Writer{LLM: b.deps.RecapLLM}
	var out strings.Builder
	title := "Previously on " + g.Campaign + "…"
	var spoken []string
	per := 6
	if len(sessions) > 1 {
		per = 3
	}
	for _, s := range sessions {
		in, err := recapInput(ctx, camp, dmCamp, s.ID, safe)
		if err != nil {
			b.finishErr(i, err)
			return
		}
		in.Sentences = per
		r, err := w.Write(ctx, in)
		if err != nil {
			b.finishErr(i, err)
			return
		}
		if len(sessions) > 1 {
			when := s.StartedAt.UTC().Format("2006-01-02")
			if s.GameDate != "" {
				when = s.GameDate + ", played " + when
			}
			fmt.Fprintf(&out, "\n**Session %s** (%s)\n", s.ID, when)
		}
		times := map[int64]string{}
		for _, l := range in.Lines {
			times[l.ID] = l.At.UTC().Format("15:04:05")
		}
		for _, sent := range r.Sentences {
			var refs []string
			for _, id := range sent.Lines {
				refs = append(refs, times[id])
			}
			fmt.Fprintf(&out, "• %s  `⟨%s %s⟩`\n", sent.Text, s.ID, strings.Join(refs, ", "))
			spoken = append(spoken, sent.Text)
		}
		if r.Extractive && b.deps.RecapLLM == nil && len(r.Sentences) > 0 && len(sessions) == 1 {
			out.WriteString("_No LLM is configured, so this recap is the session's key lines._\n")
		}
	}
	text := strings.TrimSpace(out.String())
	if text == "" {
		text = "There is nothing to recap yet."
	}
	header := "**" + title + "**"
	if safe {
		header += " _(player-safe: no secrets, no unconfirmed facts)_"
	}
	if delivery == "voice" {
		if b.deps.Voice == nil || !b.state.hasSession(g.ID) || g.NarratorNPC == "" {
			b.finishErr(i, errors.New("a spoken recap needs a running voice session and a narrator NPC (discord.guilds[].narrator_npc)"))
			return
		}
		if err := b.deps.Voice.Say(ctx, g.ID, g.NarratorNPC, strings.Join(spoken, " ")); err != nil {
			b.finishErr(i, err)
			return
		}
		b.finish(i, true, "🗣️ The narrator is speaking the recap.\n"+header+"\n"+text, nil, nil)
		return
	}
	b.finish(i, delivery != "public", header+"\n"+text, nil, nil)
}

// recapSessions picks the sessions a recap covers: the campaign's in the
// order of their in-world dates (inWorldOrder), oldest first without.
func (b *Bot) recapSessions(ctx context.Context, camp *memaccess.Campaign, scope, session string) ([]memory.Session, error) {
	all, err := camp.Sessions().Sessions(ctx)
	if err != nil {
		return nil, err
	}
	var withLines []memory.Session
	for _, s := range all {
		if s.Entries > 0 {
			withLines = append(withLines, s)
		}
	}
	switch scope {
	case "session":
		if session == "" {
			return nil, errors.New("name the session to recap")
		}
		s, err := camp.Sessions().Session(ctx, session)
		if err != nil {
			return nil, err
		}
		return []memory.Session{s}, nil
	case "campaign":
		return inWorldOrder(ctx, camp, withLines)
	default:
		if len(withLines) == 0 {
			return nil, nil
		}
		return withLines[len(withLines)-1:], nil
	}
}

// inWorldOrder orders the sessions of a campaign recap by their in-world
// dates (recap.InWorldOrder, the one ordering of every campaign recap).
func inWorldOrder(ctx context.Context, camp *memaccess.Campaign, played []memory.Session) ([]memory.Session, error) {
	cal, _, err := camp.Sessions().Calendar(ctx)
	if err != nil {
		return nil, err
	}
	return recap.InWorldOrder(cal, played), nil
}

// recapInput gathers one session's lines and facts. A player-safe recap is
// built from the campaign as a player sees it (camp itself when it is a
// player's handle, the DM's narrowed to the player viewer otherwise):
// confirmed facts that are not secret, and the lines the handle may read
// (through "any player", those said while the party was not split); nothing
// secret reaches the model. Its avoid list (what the player view
// withholds, see Withheld, read through dm, the DM's handle) is only
// checked locally, on the server.
func recapInput(ctx context.Context, camp, dm *memaccess.Campaign, sessionID string, safe bool) (recap.Input, error) {
	in := recap.Input{Evidence: map[int64][]string{}}
	view := camp
	if safe && camp.DM() {
		var err error
		if view, err = camp.As(memory.PlayerViewer()); err != nil {
			return in, err
		}
	}
	sess, err := view.Sessions().Session(ctx, sessionID)
	if err != nil {
		return in, err
	}
	es, err := view.Sessions().Entries(ctx, sessionID)
	if err != nil {
		return in, err
	}
	for _, e := range es {
		if e.NonCanon {
			continue
		}
		in.Lines = append(in.Lines, recap.Line{ID: e.ID, SessionID: e.SessionID, At: e.At, Speaker: e.SpeakerName,
			NPC: e.NPCID != "", Text: e.Text})
	}
	if len(in.Lines) > maxRecapLines {
		in.Lines = in.Lines[len(in.Lines)-maxRecapLines:]
	}
	g := view.Graph()
	// The session's facts as the campaign stood at its end, however old
	// it is (not the newest facts of the campaign now).
	facts, err := g.SessionFacts(ctx, sessionID, !safe)
	if err != nil {
		return in, err
	}
	if len(facts) > maxRecapFacts {
		// The prompt holds so many: say how many are left out.
		in.Facts = append(in.Facts, fmt.Sprintf("(this session established %d facts; the recap was given its first %d)",
			len(facts), maxRecapFacts))
		facts = facts[:maxRecapFacts]
	}
	for _, f := range facts {
		sentence := factSentence(f)
		if f.Status == memory.StatusPending {
			sentence += " (unconfirmed)"
		}
		in.Facts = append(in.Facts, sentence)
		ev, err := g.Evidence(ctx, f.ID)
		if err != nil {
			return in, err
		}
		for _, e := range ev {
			in.Evidence[e.ID] = append(in.Evidence[e.ID], sentence)
		}
	}
	// The names the recap may use: the entities the session's lines name
	// and the ends of its facts, not every entity of the campaign
	// (100,000 at the bench's 100k scale, each looked for in every line).
	named, err := g.SessionEntities(ctx, []string{sessionID})
	if err != nil {
		return in, err
	}
	var ends []string
	for _, f := range facts {
		ends = append(ends, f.SourceID, f.TargetID)
	}
	// (IDs never nil: no id is none, not all.)
	ents, err := g.FindEntities(ctx, memory.EntityFilter{IDs: append(append([]string{}, named...), ends...)})
	if err != nil {
		return in, err
	}
	for _, e := range ents {
		in.Names = append(in.Names, recap.Name{Name: e.Name, Aliases: e.Aliases,
			New: !sess.StartedAt.IsZero() && !e.CreatedAt.Before(sess.StartedAt)})
	}
	if safe {
		if in.Avoid, err = Withheld(ctx, dm, []string{sessionID}, ends); err != nil {
			return in, err
		}
	}
	return in, nil
}

func factSentence(f memaccess.FactWithNames) string {
	return fmt.Sprintf("%s %s %s", f.SourceName, strings.ToLower(strings.ReplaceAll(f.Type, "_", " ")), f.TargetName)
}

// Withheld lists, as text, what the player view leaves out and the DM's
// view shows, of what the sessions talk about: the facts a player may not
// see, as sentences, the names of the entities it may not see (first heard
// in a split scene) and the attribute strings (of entities and facts) the
// store withholds from a player. It decides nothing about secrecy: it is
// the difference of two viewer-bound reads, so the store's one definition
// (memory.Viewer, migration 0010) decides. It feeds the local check of a
// player-safe recap (recap.Input.Avoid), which never leaves the server.
//
// A recap's model is given only player-safe lines and facts, so a
// withheld text can reach a recap only through its input's words: a
// secret said aloud where the party could hear it. The list is of the
// entities the sessions' lines name ([memaccess.Graph.SessionEntities])
// and entityIDs (the ends of the input's facts): their facts, their
// attributes, their names. To these it adds the campaign's newest
// withheldRecent facts: the lines of the last minutes are not yet
// chunked, and what they name is not yet known.
//
// dm must be the DM's handle: only it may be narrowed to the player's view
// and read in full.
func Withheld(ctx context.Context, dm *memaccess.Campaign, sessionIDs, entityIDs []string) ([]string, error) {
	if !dm.DM() {
		return nil, fmt.Errorf("listing what players may not see: %w: it takes the DM's handle, not %s", memory.ErrForbidden, dm.Viewer())
	}
	player, err := dm.As(memory.PlayerViewer())
	if err != nil {
		return nil, err
	}
	named, err := dm.Graph().SessionEntities(ctx, sessionIDs)
	if err != nil {
		return nil, err
	}
	scope := slices.Compact(slices.Sorted(slices.Values(append(named, entityIDs...))))
	statuses := []memory.FactStatus{memory.StatusActive, memory.StatusPending, memory.StatusRetired, memory.StatusRejected}
	facts, err := dm.Graph().FindFacts(ctx, memaccess.FactQuery{Statuses: statuses, Limit: withheldRecent})
	if err != nil {
		return nil, err
	}
	if len(scope) > 0 {
		theirs, err := dm.Graph().FindFacts(ctx, memaccess.FactQuery{EntityIDs: scope, Statuses: statuses, Limit: maxWithheldFacts})
		if err != nil {
			return nil, err
		}
		facts = append(facts, theirs...)
	}
	// The newest and the scoped facts overlap: each once.
	var ids []int64
	seen := map[int64]bool{}
	unique := facts[:0]
	for _, f := range facts {
		if !seen[f.ID] {
			seen[f.ID] = true
			ids = append(ids, f.ID)
			unique = append(unique, f)
		}
	}
	var shownFacts []memaccess.FactWithNames
	if len(ids) > 0 {
		if shownFacts, err = player.Graph().FindFacts(ctx, memaccess.FactQuery{IDs: ids, Statuses: statuses, Limit: len(ids)}); err != nil {
			return nil, err
		}
	}
	shown := make(map[int64]map[string]bool, len(shownFacts))
	for _, f := range shownFacts {
		shown[f.ID] = stringSet(f.Attributes)
	}
	var out []string
	for _, f := range unique {
		set, ok := shown[f.ID]
		if !ok {
			out = append(out, factSentence(f))
		}
		for _, x := range stringsIn(map[string]any(f.Attributes), nil) {
			if !set[x] {
				out = append(out, x)
			}
		}
	}
	if len(scope) == 0 {
		return out, nil
	}
	byID := memory.EntityFilter{IDs: scope, IncludeRetired: true}
	shownEnts, err := player.Graph().FindEntities(ctx, byID)
	if err != nil {
		return nil, err
	}
	ents, err := dm.Graph().FindEntities(ctx, byID)
	if err != nil {
		return nil, err
	}
	strs := make(map[string]map[string]bool, len(shownEnts))
	for _, e := range shownEnts {
		strs[e.ID] = stringSet(e.Attributes)
	}
	for _, e := range ents {
		if _, ok := strs[e.ID]; !ok {
			// An entity the player view leaves out (first heard in a split
			// scene): its names too.
			out = append(out, e.Name)
			out = append(out, e.Aliases...)
		}
		for _, x := range stringsIn(map[string]any(e.Attributes), nil) {
			if !strs[e.ID][x] {
				out = append(out, x)
			}
		}
	}
	return out, nil
}

// withheldRecent is how many of the campaign's newest facts Withheld
// lists whatever the sessions name; maxWithheldFacts bounds the facts of
// the entities they name (the newest of them).
const (
	withheldRecent   = 1000
	maxWithheldFacts = 100_000
)

// stringSet is the set of the strings in attrs.
func stringSet(attrs map[string]any) map[string]bool {
	set := map[string]bool{}
	for _, x := range stringsIn(attrs, nil) {
		set[x] = true
	}
	return set
}

// stringsIn appends the non-blank strings in v, at any depth, to out.
func stringsIn(v any, out []string) []string {
	switch x := v.(type) {
	case map[string]any:
		for _, y := range x {
			out = stringsIn(y, out)
		}
	case []any:
		for _, y := range x {
			out = stringsIn(y, out)
		}
	case string:
		if strings.TrimSpace(x) != "" {
			out = append(out, x)
		}
	}
	return out
}
