package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/glyphoxa/glyphoxa/cmd/glyphoxa/internal/config"
	"github.com/glyphoxa/glyphoxa/memory"
	"github.com/glyphoxa/glyphoxa/memory/access"
	"github.com/glyphoxa/glyphoxa/memory/retrieve"
)

// cmdAsk answers a question from a campaign's memory.
func cmdAsk(ctx context.Context, e *env, args []string) error {
	fs := newFlagSet("ask", e)
	var sf storeFlags
	sf.register(fs)
	campaign := fs.String("campaign", "", "campaign id")
	npcID := fs.String("npc", "", "answer only from what this NPC heard (entity id)")
	mode := fs.String("mode", "hybrid", "retrieval mode: vector, fts, graphrag, ppr or hybrid")
	asOf := fs.String("as-of", "", "answer as the campaign stood at this session (id), date (2006-01-02, the end of that day UTC, "+
		"or RFC 3339) or in-world date of the campaign calendar (\"3 Frostfall 1452\": the last session dated on or before it): "+
		"from it and earlier sessions only, with the facts that held then about the entities the question names")
	decompose := fs.Bool("decompose", false, "hybrid mode: have the LLM (providers.llm) split the question into simpler ones, searched beside it")
	k := fs.Int("k", 5, "number of answers; in hybrid mode the entities the question names follow them")
	as := fs.String("as", "dm", "read as dm (everything), player (what any player may see, no line of a split scene; the DM's preview) "+
		"or player:USERID (what that player may see: the lines their character witnessed); --npc reads as that NPC")
	asJSON := fs.Bool("json", false, "print a JSON array of {kind, id, content, score, session_id, entity_ids, at, game_date}; kind is chunk, entry, fact or entity")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *campaign == "" {
		return usagef("--campaign is required")
	}
	question := strings.TrimSpace(strings.Join(fs.Args(), " "))
	if question == "" {
		return usagef("expected a question")
	}
	m, err := retrieve.ParseMode(*mode)
	if err != nil {
		return usagef("%v", err)
	}
	if *npcID != "" && flagSet(fs, "as") {
		// Either reader, never one silently for the other.
		return usagef("--npc reads as that NPC and --as as a player or the DM: give one of them")
	}
	if *k < 1 || *k > 100 {
		return usagef("--k must be within 1..100, got %d", *k)
	}
	store, cfg, err := sf.openStore(ctx, e)
	if err != nil {
		return err
	}
	defer store.Close()
	var v memory.Viewer
	user, bound := strings.CutPrefix(*as, "player:")
	switch {
	case *npcID != "":
		v = memory.NPCViewer(*npcID)
	case *as == "dm":
		v = memory.DMViewer()
	case *as == "player":
		v = memory.PlayerViewer()
	case bound:
		v = memory.PlayerViewerOf(user)
		if err := v.Validate(); err != nil || user == "" {
			return usagef("--as player:USERID needs a Discord user id, got %q", user)
		}
	default:
		return usagef("--as must be dm, player or player:USERID, got %q (use --npc ID to read as an NPC)", *as)
	}
	camp, err := openCampaignAs(ctx, store, *campaign, v)
	if err != nil {
		return err
	}
	if *npcID != "" {
		if err := checkNPC(ctx, camp, *npcID); err != nil {
			return err
		}
	}
	var rc retrieve.Config
	if *decompose {
		if err := cfg.Require(config.NeedLLM); err != nil {
			return err
		}
		c, err := newLLM(cfg, nil)
		if err != nil {
			return err
		}
		rc.Decomposer = retrieve.LLMDecomposer{LLM: c}
	}
	emb, err := newEmbedder(cfg)
	if err != nil {
		return err
	}
	r, err := retrieve.New(camp, emb, rc)
	if err != nil {
		return err
	}
	at, err := resolveAsOf(ctx, camp, *asOf)
	if err != nil {
		return err
	}
	var res []retrieve.Result
	if at.none {
		// A date before the first session: nothing was said yet.
	} else if res, err = r.Search(ctx, retrieve.Query{Text: question, Mode: m, K: *k, NPCID: *npcID, AsOf: at.session}); err != nil {
		return err
	}
	if *asOf != "" {
		var facts []access.FactWithNames
		switch {
		case at.none && at.inWorld:
			// An in-world date before every dated session: no fact yet.
		case at.date.IsZero():
			facts, err = camp.Graph().NamedFactsAsOf(ctx, question, at.session, true) // the viewer filters
		default:
			facts, err = camp.Graph().NamedFactsAsOfTime(ctx, question, at.date, true)
		}
		if err != nil {
			return err
		}
		dates, err := gameDates(ctx, camp)
		if err != nil {
			return err
		}
		for _, f := range facts {
			since := ""
			if d := dates[f.Provenance.SessionID]; d != "" {
				// A fact's in-world date is its session's.
				since = fmt.Sprintf(" (since %s, session %s)", d, f.Provenance.SessionID)
			}
			res = append(res, retrieve.Result{Kind: "fact", ID: fmt.Sprint(f.ID), SessionID: at.session, EntityIDs: []string{f.SourceID, f.TargetID},
				Content: fmt.Sprintf("as of %s: %s %s %s%s", at.label, f.SourceName, f.Type, f.TargetName, since)})
		}
	}
	if *asJSON {
		if res == nil {
			res = []retrieve.Result{}
		}
		enc := json.NewEncoder(e.stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(res)
	}
	if len(res) == 0 {
		printf(e.stdout, "nothing found in campaign %q (is it processed? glyphoxa process --campaign %s)\n", *campaign, *campaign)
		return nil
	}
	for i, x := range res {
		when := ""
		if !x.At.IsZero() {
			when = ", " + x.At.UTC().Format("2006-01-02")
		}
		if x.GameDate != "" {
			when += " (" + x.GameDate + ")"
		}
		session := ""
		if x.SessionID != "" { // an entity belongs to no session
			session = ", session " + x.SessionID
		}
		printf(e.stdout, "%d. [%s %s%s%s, score %.4f]\n", i+1, x.Kind, x.ID, session, when, x.Score)
		for _, line := range strings.Split(x.Content, "\n") {
			printf(e.stdout, "   %s\n", line)
		}
	}
	return nil
}

// gameDates maps the campaign's dated sessions to their in-world dates.
func gameDates(ctx context.Context, camp *access.Campaign) (map[string]string, error) {
	dated, err := camp.Sessions().GameDates(ctx)
	if err != nil {
		return nil, err
	}
	m := make(map[string]string, len(dated))
	for _, s := range dated {
		m[s.ID] = s.GameDate
	}
	return m, nil
}

// asOf is what `ask --as-of` resolved to: a session, or a date and the
// session under way then.
type asOf struct {
	// session is the session the search is restricted to (empty: none).
	session string
	// date is set when --as-of was a date.
	date time.Time
	// none: a date before the first session.
	none bool
	// inWorld: --as-of was an in-world date (with none: before every
	// dated session).
	inWorld bool
	label   string
}

// resolveAsOf reads --as-of: a session id of the campaign, else a date
// (2006-01-02 means the end of that day, UTC; or RFC 3339), searched as of
// the last session started by then.
func resolveAsOf(ctx context.Context, camp *access.Campaign, v string) (asOf, error) {
	if v == "" {
		return asOf{}, nil
	}
	sessions, err := camp.Sessions().Sessions(ctx)
	if err != nil {
		return asOf{}, err
	}
	for _, s := range sessions {
		if s.ID == v {
			return asOf{session: v, label: "session " + v}, nil
		}
	}
	t, err := time.Parse(time.RFC3339, v)
	if err != nil {
		d, derr := time.Parse("2006-01-02", v)
		if derr != nil {
			return resolveGameDate(ctx, camp, v)
		}
		t = d.Add(24*time.Hour - time.Nanosecond)
	}
	out := asOf{date: t, none: true, label: v}
	for _, s := range sessions {
		if !s.StartedAt.After(t) && (out.none || s.StartedAt.After(startOf(sessions, out.session))) {
			out.session, out.none = s.ID, false
		}
	}
	return out, nil
}

// resolveGameDate reads --as-of as an in-world date of the campaign's
// calendar: the search is as of the last session dated on or before it
// (see postgres.SessionLog.SessionOnGameDate); before every dated
// session, nothing was said yet.
func resolveGameDate(ctx context.Context, camp *access.Campaign, v string) (asOf, error) {
	cal, _, err := camp.Sessions().Calendar(ctx)
	if err != nil {
		return asOf{}, err
	}
	d, err := cal.Parse(v)
	if err != nil {
		return asOf{}, usagef("--as-of %q is neither a session of campaign %q, a date (2006-01-02 or RFC 3339) nor an in-world date of %s",
			v, camp.ID(), cal.Describe())
	}
	label := cal.Format(d)
	s, ok, err := camp.Sessions().SessionOnGameDate(ctx, cal, d)
	if err != nil {
		return asOf{}, err
	}
	if !ok {
		return asOf{none: true, inWorld: true, label: label}, nil
	}
	return asOf{session: s.ID, label: label + " (session " + s.ID + ")"}, nil
}

// startOf is when session id of ss started.
func startOf(ss []memory.Session, id string) time.Time {
	for _, s := range ss {
		if s.ID == id {
			return s.StartedAt
		}
	}
	return time.Time{}
}
