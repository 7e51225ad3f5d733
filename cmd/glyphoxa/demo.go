package main

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/glyphoxa/glyphoxa/bot/console"
	"github.com/glyphoxa/glyphoxa/bot/recap"
	"github.com/glyphoxa/glyphoxa/bot/voicesession"
	"github.com/glyphoxa/glyphoxa/cmd/glyphoxa/internal/config"
	"github.com/glyphoxa/glyphoxa/correction"
	"github.com/glyphoxa/glyphoxa/lifecycle/continuity"
	"github.com/glyphoxa/glyphoxa/lifecycle/lease"
	"github.com/glyphoxa/glyphoxa/memory"
	"github.com/glyphoxa/glyphoxa/memory/access"
	"github.com/glyphoxa/glyphoxa/memory/campaignfile"
	"github.com/glyphoxa/glyphoxa/memory/postgres"
	"github.com/glyphoxa/glyphoxa/memory/retrieve"
	"github.com/glyphoxa/glyphoxa/npc"
	"github.com/glyphoxa/glyphoxa/table"
	"github.com/glyphoxa/glyphoxa/table/scene"
	"github.com/glyphoxa/glyphoxa/voice/stt"
	"github.com/glyphoxa/glyphoxa/voice/tts"
)

const (
	demoCampaign = "ironhold-saga"
	demoQuestion = "Where did the Ashen Circle take the steel?"
)

// cmdDemo plays a scene through the table, without Discord: the same turn
// loop as `serve`, with a loopback transport and a virtual clock.
func cmdDemo(ctx context.Context, e *env, args []string) error {
	fs := newFlagSet("demo", e)
	var sf storeFlags
	sf.register(fs)
	scenePath := fs.String("scene", "testdata/scenes/rusty-tankard.yaml", "the scene to play (see README: Scenes)")
	campaign := fs.String("campaign", "", "the campaign to play it in (default: a fresh copy of the sample campaign, imported from --file as <id>-demo-N)")
	file := fs.String("file", "testdata/campaigns/ironhold-saga.yaml", "the sample campaign file, imported when --campaign is not given")
	create := fs.Bool("create", false, "with --campaign: create that campaign, empty, when it does not exist yet (without it, an unknown --campaign is refused)")
	out := fs.String("out", "demo-out", "where the NPCs' spoken replies are written as WAV files")
	asJSON := fs.Bool("json", false, "print one JSON object per line or command of the scene, and nothing else")
	stateDir := fs.String("state-dir", "", "where lines wait while the database is unreachable (default: lifecycle.spool_dir, as serve); a later run replays what is left there")
	drain := fs.Duration("drain-timeout", 30*time.Second, "how long the end of the scene waits for the database to take the lines spooled during an outage")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	f, err := os.Open(*scenePath)
	if err != nil {
		return fmt.Errorf("the scene: %w (run the demo from the repository, or pass --scene)", err)
	}
	sc, err := scene.Parse(f, *scenePath)
	f.Close()
	if err != nil {
		return err
	}
	began := time.Now()
	step := func(format string, a ...any) {
		if !*asJSON {
			printf(e.stdout, "\n[%5.1fs] %s\n", time.Since(began).Seconds(), fmt.Sprintf(format, a...))
		}
	}
	store, cfg, err := sf.openStore(ctx, e)
	if err != nil {
		return err
	}
	defer store.Close()
	// The demo's own lines say what happens (fallback answers included);
	// the log shows errors only.
	log := slog.New(slog.NewTextHandler(e.stderr, &slog.HandlerOptions{Level: slog.LevelError}))

	// The outage spool lives where serve keeps it (or in --state-dir), never
	// in a directory removed on exit: lines the database did not take wait
	// there for the next run.
	if *stateDir != "" {
		cfg.Lifecycle.SpoolDir = *stateDir
	}
	var camp *postgres.Campaign
	if *campaign == "" {
		// Each run plays in a fresh copy of the sample campaign, so what
		// one run said is not what the next one's NPCs remember; a run
		// whose lines still wait in the outage spool is continued, so
		// they reach its session log.
		var resumed bool
		if camp, resumed, err = demoImport(ctx, store, *file, cfg.Lifecycle.SpoolDir); err != nil {
			return err
		}
		if resumed {
			step("continuing the demo campaign %s: lines of its last run wait in the outage spool", camp.ID())
		} else {
			step("imported the sample campaign %s as the fresh demo campaign %s", *file, camp.ID())
		}
	} else if camp, err = playCampaign(ctx, store, *campaign, *file, *create); err != nil {
		return err
	} else {
		step("playing in campaign %s", camp.ID())
	}
	sc.Session, err = freeSession(ctx, camp, sc.Session)
	if err != nil {
		return err
	}
	if *drain <= 0 {
		return usagef("--drain-timeout must be positive, got %s", *drain)
	}
	prov, release, err := tableProviders(cfg, log, nil, nil)
	if release != nil {
		defer release()
	}
	if err != nil {
		return err
	}
	if sp, ok := prov.STT.(*stt.Sphinx); ok {
		// The offline engine learns the campaign's way of speaking from
		// its transcripts.
		if sp.Corpus, err = campaignCorpus(ctx, camp); err != nil {
			return err
		}
	}
	if prov.LLM == nil && !*asJSON {
		printf(e.stdout, "  no LLM configured. %s Set GLYPHOXA_LLM_BASE_URL, GLYPHOXA_LLM_API_KEY and GLYPHOXA_LLM_MODEL for real replies.\n", npc.OfflineBehaviour)
	}
	provider := cfg.Providers.STT.Provider
	if provider == "" {
		provider = "pocketsphinx, offline"
	}
	step("playing %s: %d steps through the table (speech synthesis → Opus → lanes → speech-to-text (%s) → correction → session log → addressing → NPC)",
		*scenePath, len(sc.Lines), provider)
	door, closeDoor, err := openDoor(ctx, store, cfg, log)
	if err != nil {
		return err
	}
	defer closeDoor()
	dm, err := door.Open(ctx, camp.ID(), memory.DMViewer())
	if err != nil {
		return err
	}
	settings := tableSettings(cfg)
	settings.DrainTimeout = *drain
	opts := scene.Options{Campaign: dm, Providers: prov, Settings: settings, OutDir: *out, Logger: log}
	// The players speak, and the NPCs answer, with the best offline voices
	// installed: distinct voices that speech-to-text understands well. The
	// NPCs' offline voices speak for the players too when they are the
	// configured ones (one festival kept running, not two).
	var local *tts.Local
	if v, ok := prov.Speaker.(*table.Voices); ok {
		local, _ = v.Default.(*tts.Local)
	}
	if local == nil {
		if l, err := tts.NewLocal(tts.LocalConfig{Logger: log}); err == nil {
			local = l
			defer l.Close()
		}
	}
	if local != nil {
		opts.PlayerVoice = local
		for _, v := range local.PlayerVoices(len(sc.Players)) {
			opts.PlayerVoices = append(opts.PlayerVoices, v.Name)
		}
		if v, ok := prov.Speaker.(*table.Voices); ok {
			opts.NPCVoice, opts.NPCVoiceName = v.Default, v.DefaultVoice
		}
	}
	enc := json.NewEncoder(e.stdout)
	opts.OnEvent = func(ev scene.Event) {
		if *asJSON {
			if err := enc.Encode(jsonEvent(ev)); err != nil {
				log.Warn("writing the event", "err", err)
			}
			return
		}
		printEvent(e, ev)
	}
	// Live continuity: each line is checked against canon; a card goes to
	// the terminal (the demo's DM) and the console's Live page.
	cards := continuity.NewBoard()
	if cfg.Lifecycle.Continuity {
		stopCheck, hook := demoContinuity(ctx, dm, camp.ID(), cards, func(c continuity.Card) {
			printf(e.stderr, "glyphoxa demo: ⚠️ continuity card %s: %s (%s said %q; canon: %s)\n", c.ID, c.Claim, c.Line.Speaker,
				c.Line.Text, c.Canon.Text)
		}, log)
		defer stopCheck()
		opts.OnRecorded = hook
	}
	// The table shows on the Live page of a console on the same database.
	var running atomic.Pointer[table.Session]
	opts.OnOpen = running.Store
	names := map[string]string{}
	for _, p := range sc.Players {
		names[p.ID] = p.Name
	}
	stopLive := publishLive(ctx, door, []string{camp.ID()}, console.LiveFunc(func(string) console.LiveStatus {
		s := running.Load()
		if s == nil {
			return console.LiveStatus{}
		}
		st := voicesession.LiveOf(s, func(id string) string { return cmp.Or(names[id], id) })
		st.Cards = cards.List(camp.ID())
		return st
	}), lease.NewOwner(), "demo", log)
	res, err := scene.Play(ctx, sc, opts)
	stopLive()
	if waiting := spoolWaiting(err); len(waiting) > 0 {
		lines := 0
		for _, pe := range waiting {
			lines += pe.Lines
			printf(e.stderr, "glyphoxa demo: %d lines wait in the outage spool %s: the database did not take them within --drain-timeout (%s); they stay there, and the next glyphoxa demo or serve on the same state directory replays them\n",
				pe.Lines, pe.Dir, *drain)
		}
		return fmt.Errorf("%d lines of the scene are not in the session log yet (the database is unreachable)", lines)
	}
	if err != nil {
		return err
	}
	if *asJSON {
		return nil
	}
	step("the session ended after %s of scene time; post-session processing: %d new entities, %d facts accepted, %d waiting for the DM",
		res.Took.Round(time.Second), res.Report.EntitiesCreated, res.Report.Accepted, res.Report.Pending)
	ents, err := camp.Graph().FindEntities(ctx, memory.EntityFilter{})
	if err != nil {
		return err
	}
	sum := scene.Summarize(res.Lines, correction.FromMemory(ents))
	if sum.Spoken > 0 {
		printf(e.stdout, "  heard vs said: %.0f%% word error over %d spoken lines (after name correction); %d of %d names heard\n",
			100*sum.WER(), sum.Spoken, sum.NamesHeard, sum.Names)
	}
	printf(e.stdout, "  %d lines addressed an NPC, %d answered\n", sum.Addressed, sum.Answered)
	if in, err := camp.Inspect(ctx); err == nil {
		printf(e.stdout, "  memory now holds %d sessions, %d chunks, %d facts in canon, %d waiting for review\n",
			len(in.Sessions), in.Chunks, in.Facts[memory.StatusActive], len(in.Pending))
	}
	return demoMemory(ctx, e, camp, cfg, res, step)
}

// jsonEvent is the --json form of an event: a line's fields at the top
// level, or the command.
func jsonEvent(ev scene.Event) any {
	if ev.Line != nil {
		return ev.Line
	}
	return ev.Command
}

func printEvent(e *env, ev scene.Event) {
	if c := ev.Command; c != nil {
		printf(e.stdout, "  %s  %s: %s → %s", c.At.Format("15:04:05"), c.By, c.Command, c.Result)
		if c.Error != "" {
			printf(e.stdout, " (%s)", c.Error)
		}
		printf(e.stdout, "\n")
		return
	}
	l := ev.Line
	printf(e.stdout, "  %s  %-6s said   %q\n", l.At.Format("15:04:05"), l.Speaker, l.Said)
	printf(e.stdout, "            heard  %q\n", l.Heard)
	if l.Corrected != l.Heard && l.Corrected != "" {
		printf(e.stdout, "            fixed  %q\n", l.Corrected)
	}
	switch {
	case l.Dropped != "":
		printf(e.stdout, "            → not recorded: %s\n", l.Dropped)
	case l.Addressee == "":
		printf(e.stdout, "            → no NPC answers (%s)\n", l.Reason)
	case l.Reply != "" && l.Fallback:
		printf(e.stdout, "            → %s answers from memory, without an LLM (%s): %q\n", l.Addressee, l.Reason, l.Reply)
	case l.Reply != "":
		printf(e.stdout, "            → %s answers (%s): %q\n", l.Addressee, l.Reason, l.Reply)
	default:
		printf(e.stdout, "            → %s is addressed (%s) but does not answer: %s\n", l.Addressee, l.Reason, l.Error)
	}
	if l.Audio != "" {
		printf(e.stdout, "            (spoken: %s)\n", l.Audio)
	}
}

// demoMemory shows what the scene left in memory: a retrieval, the facts
// waiting for review and a recap.
func demoMemory(ctx context.Context, e *env, camp *postgres.Campaign, cfg config.Config, res scene.Result, step func(string, ...any)) error {
	step("what the last addressed NPC was told (its hot context)")
	for i := len(res.Lines) - 1; i >= 0; i-- {
		if l := res.Lines[i]; len(l.Context) > 0 {
			// Its sheet and rules (the system message), then its notes: the
			// hot context, sent as a message of its own (npc.KnowledgeTitle).
			printf(e.stdout, "%s\n", indent(l.Context[0].Content, "  | "))
			for _, m := range l.Context[1:] {
				if strings.HasPrefix(m.Content, npc.KnowledgeTitle) {
					printf(e.stdout, "  |\n%s\n", indent(m.Content, "  | "))
				}
			}
			break
		}
	}
	step("asking the campaign's memory: %q", demoQuestion)
	r, err := newRetriever(camp, cfg)
	if err != nil {
		return err
	}
	results, err := r.Search(ctx, retrieve.Query{Text: demoQuestion, K: 3})
	if err != nil {
		return err
	}
	for i, x := range results {
		where := x.Kind
		if x.SessionID != "" {
			where += " " + x.SessionID
		}
		printf(e.stdout, "  %d. [%s, %.3f] %s\n", i+1, where, x.Score, truncateStr(oneLine(x.Content), 160))
	}
	step("facts waiting for the DM's review")
	g := camp.Graph()
	pending, err := g.PendingFacts(ctx, memory.FactFilter{})
	if err != nil {
		return err
	}
	for _, f := range pending {
		printf(e.stdout, "  #%d %s -%s-> %s (confidence %.2f, %s, session %s)\n", f.ID, entityName(ctx, g, f.SourceID), f.Type,
			entityName(ctx, g, f.TargetID), f.Provenance.Confidence, f.Provenance.Source, f.Provenance.SessionID)
	}
	step("recap of the scene")
	es, err := camp.Sessions().Entries(ctx, res.SessionID)
	if err != nil {
		return err
	}
	var in recap.Input
	for _, x := range es {
		in.Lines = append(in.Lines, recap.Line{ID: x.ID, SessionID: x.SessionID, At: x.At, Speaker: x.SpeakerName, NPC: x.NPCID != "", Text: x.Text})
	}
	w := recap.Writer{}
	if cfg.Providers.LLM.Configured() {
		if w.LLM, err = newLLM(cfg, nil); err != nil {
			return err
		}
	}
	rc, err := w.Write(ctx, in)
	if err != nil {
		return err
	}
	for _, s := range rc.Sentences {
		printf(e.stdout, "  %s  (lines %v)\n", s.Text, s.Lines)
	}
	step("recap of the campaign, its sessions in in-world order")
	if err := demoCampaignRecap(ctx, e, camp, w); err != nil {
		return err
	}
	step("done. `glyphoxa inspect --campaign %s` shows the whole memory; `glyphoxa ask --campaign %s \"…\"` asks it.", camp.ID(), camp.ID())
	return nil
}

// demoCampaignRecap prints the campaign's recap: each session with lines
// in the order of their in-world dates (recap.InWorldOrder, the ordering
// of every campaign recap), a few sentences each.
func demoCampaignRecap(ctx context.Context, e *env, camp *postgres.Campaign, w recap.Writer) error {
	all, err := camp.Sessions().Sessions(ctx)
	if err != nil {
		return err
	}
	cal, _, err := camp.Sessions().Calendar(ctx)
	if err != nil {
		return err
	}
	var played []memory.Session
	for _, s := range all {
		if s.Entries > 0 {
			played = append(played, s)
		}
	}
	for _, s := range recap.InWorldOrder(cal, played) {
		when := s.StartedAt.UTC().Format("2006-01-02")
		if s.GameDate != "" {
			when = s.GameDate + ", played " + when
		}
		printf(e.stdout, "  session %s (%s)\n", s.ID, when)
		es, err := camp.Sessions().Entries(ctx, s.ID)
		if err != nil {
			return err
		}
		in := recap.Input{Sentences: 3}
		for _, x := range es {
			in.Lines = append(in.Lines, recap.Line{ID: x.ID, SessionID: x.SessionID, At: x.At, Speaker: x.SpeakerName, NPC: x.NPCID != "", Text: x.Text})
		}
		rc, err := w.Write(ctx, in)
		if err != nil {
			return err
		}
		for _, st := range rc.Sentences {
			printf(e.stdout, "    %s\n", st.Text)
		}
	}
	return nil
}

// freeSession returns id, or id-2, id-3… when the campaign already has a
// session of that id (the demo played before).
func freeSession(ctx context.Context, camp *postgres.Campaign, id string) (string, error) {
	ss, err := camp.Sessions().Sessions(ctx)
	if err != nil {
		return "", err
	}
	taken := map[string]bool{}
	for _, s := range ss {
		taken[s.ID] = true
	}
	out := id
	for n := 2; taken[out]; n++ {
		out = fmt.Sprintf("%s-%d", id, n)
	}
	return out, nil
}

// playCampaign returns the campaign --campaign names. A campaign that does
// not exist is created only when asked (--create), or when it is the
// sample file's own campaign, which is imported: a mistyped id is refused
// with the known campaigns and the nearest one, not played in empty.
func playCampaign(ctx context.Context, store *postgres.Store, id, path string, create bool) (*postgres.Campaign, error) {
	if err := memory.ValidateCampaignID(id); err != nil {
		return nil, usagef("--campaign: %v", err)
	}
	known, err := store.Campaigns(ctx)
	if err != nil {
		return nil, err
	}
	if slices.Contains(known, id) || create {
		return store.Campaign(ctx, id)
	}
	if f, err := os.Open(path); err == nil {
		cf, err := campaignfile.Parse(f, path)
		f.Close()
		if err == nil && cf.Campaign == id {
			if err := store.InTx(ctx, id, func(c *postgres.Campaign) error {
				_, err := cf.Apply(ctx, c.Sessions(), c.Graph())
				return err
			}); err != nil {
				return nil, err
			}
			return store.Campaign(ctx, id)
		}
	}
	msg := fmt.Sprintf("campaign %q does not exist", id)
	if len(known) > 0 {
		if near := nearest(id, known, 1); len(near) > 0 {
			msg += fmt.Sprintf("; did you mean %q?", near[0])
		}
		msg += " Known campaigns: " + strings.Join(known, ", ") + "."
	} else {
		msg += "; the database has no campaigns yet."
	}
	return nil, fmt.Errorf("%s Without --campaign the demo plays in a fresh copy of the sample campaign; add --create to play in a new, empty campaign %q", msg, id)
}

// demoImport returns the campaign a demo run plays in: the sample
// campaign imported afresh as the file's id with -demo-N (N one more than
// any before), or, when lines of the latest earlier demo campaign wait in
// its outage spool under spoolDir, that campaign (resumed).
func demoImport(ctx context.Context, store *postgres.Store, path, spoolDir string) (camp *postgres.Campaign, resumed bool, err error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, false, fmt.Errorf("the sample campaign: %w (run the demo from the repository, or pass --file)", err)
	}
	defer f.Close()
	cf, err := campaignfile.Parse(f, path)
	if err != nil {
		return nil, false, err
	}
	ids, err := store.Campaigns(ctx)
	if err != nil {
		return nil, false, err
	}
	prefix := cf.Campaign + "-demo-"
	last := 0
	for _, id := range ids {
		if n, err := strconv.Atoi(strings.TrimPrefix(id, prefix)); err == nil && strings.HasPrefix(id, prefix) && n > last {
			last = n
		}
	}
	if last > 0 {
		id := fmt.Sprintf("%s%d", prefix, last)
		if st, err := os.Stat(filepath.Join(spoolDir, id, "spool", "spool.log")); err == nil && st.Size() > 0 {
			camp, err := store.Campaign(ctx, id)
			return camp, true, err
		}
	}
	cf.Campaign = fmt.Sprintf("%s%d", prefix, last+1)
	if err := store.InTx(ctx, cf.Campaign, func(c *postgres.Campaign) error {
		_, err := cf.Apply(ctx, c.Sessions(), c.Graph())
		return err
	}); err != nil {
		return nil, false, err
	}
	camp, err = store.Campaign(ctx, cf.Campaign)
	return camp, false, err
}

// campaignCorpus is the campaign's transcript, as sentences.
func campaignCorpus(ctx context.Context, camp *postgres.Campaign) ([]string, error) {
	sessions, err := camp.Sessions().Sessions(ctx)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, s := range sessions {
		es, err := camp.Sessions().Entries(ctx, s.ID)
		if err != nil {
			return nil, err
		}
		for _, e := range es {
			out = append(out, e.Text)
		}
	}
	return out, nil
}

func indent(s, prefix string) string {
	return prefix + strings.ReplaceAll(strings.TrimRight(s, "\n"), "\n", "\n"+prefix)
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

func entityName(ctx context.Context, g *postgres.Graph, id string) string {
	if e, err := g.Entity(ctx, id); err == nil {
		return e.Name
	}
	return id
}

// demoContinuity checks the demo's lines against the campaign's canon
// (lifecycle/continuity): it returns the table's OnRecorded hook, which
// puts each card on cards and calls raised, and the function that stops
// the canon refresh loop and waits for it.
func demoContinuity(ctx context.Context, camp *access.Campaign, campaignID string, cards *continuity.Board,
	raised func(continuity.Card), log *slog.Logger) (stop func(), hook func(memory.TranscriptEntry)) {
	chk, err := continuity.New(continuity.Config{Source: continuity.CampaignSource(camp), Logger: log})
	if err != nil {
		log.Warn("live continuity is off", "err", err)
		return func() {}, nil
	}
	if _, err := chk.Refresh(ctx); err != nil {
		log.Warn("canon could not be read; lines are checked once it can", "err", err)
	}
	cctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); chk.Run(cctx) }()
	hook = func(e memory.TranscriptEntry) {
		for _, f := range chk.Check(e.SpeakerName, e.Text) {
			card := cards.Add(continuity.Card{Campaign: campaignID, Finding: f, Line: continuity.Line{SessionID: e.SessionID,
				SpeakerID: e.SpeakerID, Speaker: e.SpeakerName, Text: e.Text, At: e.At, Key: e.IdempotencyKey}, Raised: time.Now()})
			if err := cards.Save(ctx, camp); err != nil {
				log.Warn("a continuity card could not be stored yet; it is kept in this process until it can", "card", card.ID, "err", err)
			}
			raised(card)
		}
	}
	return func() { cancel(); <-done }, hook
}
