package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/glyphoxa/glyphoxa/bot/recap"
	"github.com/glyphoxa/glyphoxa/bot/voicesession"
	"github.com/glyphoxa/glyphoxa/correction"
	"github.com/glyphoxa/glyphoxa/lifecycle/session"
	"github.com/glyphoxa/glyphoxa/memory"
	"github.com/glyphoxa/glyphoxa/memory/campaignfile"
	"github.com/glyphoxa/glyphoxa/memory/postgres"
	"github.com/glyphoxa/glyphoxa/memory/retrieve"
	"github.com/glyphoxa/glyphoxa/npc"
	"github.com/glyphoxa/glyphoxa/voice/audio"
	"github.com/glyphoxa/glyphoxa/voice/playback"
	"github.com/glyphoxa/glyphoxa/voice/stt"
	"github.com/glyphoxa/glyphoxa/voice/tts"
)

// demoLine is one line of the demo's scripted scene.
type demoLine struct {
	user, name, voice, text string
}

// demoScene is a short scene at the Rusty Tankard, spoken by three players.
var demoScene = []demoLine{
	{"u1", "Thorin", "en-us", "Brannoc, what do you know about the Ashen Circle?"},
	{"u2", "Lyra", "en-gb+f3", "They took the steel to the Tower of Whispers."},
	{"u3", "Kael", "en-us+m7", "Brannoc, will the Guild still pay us two hundred gold?"},
	{"u1", "Thorin", "en-us", "Vexa was with them. I think she serves Eldrinax."},
}

const (
	demoCampaign = "ironhold-saga"
	demoSession  = "s3-demo"
	demoQuestion = "Where did the Ashen Circle take the steel?"
)

// demoStart is when the demo session takes place in the campaign's time.
var demoStart = time.Date(2026, 3, 15, 19, 0, 0, 0, time.UTC)

// cmdDemo plays a scripted scene through the voice pipeline without Discord.
func cmdDemo(ctx context.Context, e *env, args []string) error {
	fs := newFlagSet("demo", e)
	var sf storeFlags
	sf.register(fs)
	file := fs.String("file", "testdata/campaigns/ironhold-saga.yaml", "the sample campaign file")
	out := fs.String("out", "demo-out", "where NPC replies are written as WAV files (with an LLM)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	began := time.Now()
	step := func(format string, a ...any) {
		printf(e.stdout, "\n[%5.1fs] %s\n", time.Since(began).Seconds(), fmt.Sprintf(format, a...))
	}
	store, cfg, err := sf.openStore(ctx, e)
	if err != nil {
		return err
	}
	defer store.Close()
	log := slog.New(slog.NewTextHandler(e.stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))

	step("importing the sample campaign %s", *file)
	camp, err := demoImport(ctx, store, *file)
	if err != nil {
		return err
	}
	vd, err := newVoiceDeps(store, cfg, log)
	if err != nil {
		return err
	}
	defer vd.Close()
	table, err := vd.table(ctx, camp)
	if err != nil {
		return err
	}
	if sp, ok := vd.stt.(*stt.Sphinx); ok {
		// The offline engine learns the campaign's way of speaking from
		// its transcripts.
		corpus, err := campaignCorpus(ctx, camp)
		if err != nil {
			return err
		}
		sp.Corpus = corpus
	}
	printf(e.stdout, "  %d names boost speech-to-text: %s…\n", len(table.Hints), strings.Join(table.Hints[:min(8, len(table.Hints))], ", "))
	if table.Agent == nil {
		printf(e.stdout, "  no LLM configured: NPCs will not answer (set GLYPHOXA_LLM_BASE_URL, GLYPHOXA_LLM_API_KEY and GLYPHOXA_LLM_MODEL)\n")
	}

	stateDir, err := os.MkdirTemp("", "glyphoxa-demo-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(stateDir)
	rec, err := session.Start(ctx, session.Config{SessionID: demoSession, Log: camp.Sessions(), Graph: camp.Graph(),
		Index: camp.Index(), Ping: store.Ping, StateDir: stateDir, Summarizer: noSummarizer{},
		PostSession: vd.postProcessor(camp), Logger: log})
	if err != nil {
		return err
	}
	defer rec.Close(context.WithoutCancel(ctx))
	if err := camp.Sessions().StartSession(ctx, demoSession, demoStart); err != nil {
		return err
	}

	step("synthesising the players' speech (espeak-ng) and encoding it as Discord sends it (Opus, 20 ms frames)")
	packets, err := demoPackets(ctx, demoScene)
	if err != nil {
		return err
	}
	var utterances []audio.Utterance
	router, err := audio.NewRouter(audio.Config{Endpoint: cfg.Voice.EndOfTurn.Std(), MaxUtterance: cfg.Voice.MaxUtterance.Std(),
		OnUtterance: func(u audio.Utterance) { utterances = append(utterances, u) }})
	if err != nil {
		return err
	}
	demoDeliver(router, packets)
	router.Close()
	printf(e.stdout, "  %d packets → %d utterances (decoded at 16 kHz, voice activity, end of turn after %s of silence)\n",
		len(packets), len(utterances), cfg.Voice.EndOfTurn.Std())

	provider := cfg.Providers.STT.Provider
	if provider == "" {
		provider = "pocketsphinx, offline"
	}
	step("transcribing (%s), correcting names, recording, and routing each line to an NPC", provider)
	pipe := table.Correct.(corrector).p
	addr := npc.NewAddresser(table.Names, table.IsNPC, nil, 0)
	names := map[string]demoLine{}
	for _, l := range demoScene {
		names[l.user] = l
	}
	var addressed string
	for i, u := range utterances {
		who := names[u.UserID]
		if len(utterances) == len(demoScene) {
			who = demoScene[i]
		}
		t0 := time.Now()
		heard, err := vd.stt.Transcribe(ctx, u.Audio, stt.Hints{Keyterms: table.Hints, Language: cfg.Providers.STT.Language})
		raw := strings.TrimSpace(heard.Text)
		if err != nil || raw == "" {
			printf(e.stdout, "  %s: speech-to-text gave nothing (%v); using the script's words\n", who.name, err)
			raw = strings.ToLower(strings.Trim(demoScene[min(i, len(demoScene)-1)].text, ".?!"))
		}
		sttTime := time.Since(t0)
		words := make([]correction.Word, 0, len(heard.Words))
		for _, w := range heard.Words {
			words = append(words, correction.Word{Text: w.Text, Confidence: w.Confidence})
		}
		res := pipe.Correct(correction.Utterance{Text: raw, Words: words})
		printf(e.stdout, "  %-6s said   %q\n         heard  %q (%d ms)\n", who.name, who.text, raw, sttTime.Milliseconds())
		for _, s := range res.Substitutions {
			printf(e.stdout, "         fixed  %q → %s (%.2f, %s)\n", s.Original, s.Replacement, s.Score, s.Method)
		}
		at := demoStart.Add(u.Start.Sub(utterances[0].Start))
		entry := memory.TranscriptEntry{SessionID: demoSession, SpeakerID: u.UserID, SpeakerName: who.name, Text: res.Text,
			RawText: raw, At: at, Duration: u.Duration(), IdempotencyKey: fmt.Sprintf("demo:%d", i)}
		if err := rec.Record(ctx, entry); err != nil {
			return err
		}
		d := addr.Decide(npc.AddressInput{Text: res.Text, SpeakerID: u.UserID, At: at})
		if d.NPCID == "" {
			printf(e.stdout, "         → no NPC answers (%s)\n", d.Reason)
			continue
		}
		addressed = d.NPCID
		printf(e.stdout, "         → %s answers (%s)\n", table.NPCName(d.NPCID), d.Reason)
		if table.Agent != nil {
			if err := demoReply(ctx, e, rec, vd, table, d.NPCID, entry, i, *out); err != nil {
				printf(e.stdout, "         (the NPC could not answer: %v)\n", err)
			}
		}
	}
	if err := rec.ConsolidateNow(ctx); err != nil {
		return err
	}

	if addressed == "" {
		addressed = "brannoc"
		printf(e.stdout, "  (no NPC was addressed in what speech-to-text heard; the script speaks to Brannoc)\n")
	}
	{
		step("what %s would be told (hot context: identity, recent transcript, scene)", table.NPCName(addressed))
		hc, err := newHotContext(store, camp, cfg).HotContext(ctx, addressed, demoSession, cfg.Memory.HotContextTokens)
		if err != nil {
			return err
		}
		printf(e.stdout, "%s\n", indent(hc.Text, "  | "))
		if len(hc.Traces) > 0 {
			printf(e.stdout, "  + %d memory traces the NPC can recall on demand\n", len(hc.Traces))
		}
	}

	step("ending the session: chunking and embedding it, extracting facts")
	if err := rec.End(ctx); err != nil {
		return err
	}
	rep, err := rec.Wait(ctx)
	if err != nil {
		return fmt.Errorf("post-session processing: %w", err)
	}
	if vd.llm == nil {
		printf(e.stdout, "  chunked and embedded; fact extraction skipped (no LLM configured)\n")
	} else {
		printf(e.stdout, "  %d new entities, %d mentions resolved, %d facts accepted, %d waiting for the DM\n",
			rep.EntitiesCreated, rep.EntitiesResolved, rep.Accepted, rep.Pending)
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
	pending, err := camp.Graph().PendingFacts(ctx, memory.FactFilter{})
	if err != nil {
		return err
	}
	g := camp.Graph()
	for _, f := range pending {
		printf(e.stdout, "  #%d %s -%s-> %s (confidence %.2f, %s, session %s)\n", f.ID, entityName(ctx, g, f.SourceID), f.Type,
			entityName(ctx, g, f.TargetID), f.Provenance.Confidence, f.Provenance.Source, f.Provenance.SessionID)
	}

	step("recap of the scene")
	es, err := camp.Sessions().Entries(ctx, demoSession)
	if err != nil {
		return err
	}
	var in recap.Input
	for _, x := range es {
		in.Lines = append(in.Lines, recap.Line{ID: x.ID, SessionID: x.SessionID, At: x.At, Speaker: x.SpeakerName, NPC: x.NPCID != "", Text: x.Text})
	}
	w := recap.Writer{}
	if cfg.Providers.LLM.Configured() {
		if w.LLM, err = newLLM(cfg); err != nil {
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
	step("done. `glyphoxa inspect --campaign %s` shows the whole memory; `glyphoxa ask --campaign %s \"…\"` asks it.", demoCampaign, demoCampaign)
	return nil
}

// demoImport imports the sample campaign (idempotent) and returns it.
func demoImport(ctx context.Context, store *postgres.Store, path string) (*postgres.Campaign, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("the sample campaign: %w (run the demo from the repository, or pass --file)", err)
	}
	defer f.Close()
	cf, err := campaignfile.Parse(f, path)
	if err != nil {
		return nil, err
	}
	if cf.Campaign != demoCampaign {
		return nil, fmt.Errorf("%s is campaign %q; the demo's scene is written for %q", path, cf.Campaign, demoCampaign)
	}
	if err := store.InTx(ctx, cf.Campaign, func(c *postgres.Campaign) error {
		_, err := cf.Apply(ctx, c.Sessions(), c.Graph())
		return err
	}); err != nil {
		return nil, err
	}
	return store.Campaign(ctx, cf.Campaign)
}

// demoPackets speaks the scene with espeak-ng and encodes it as each
// player's Discord client would send it: 20 ms Opus frames, nothing sent
// while a player is silent, a second of silence between lines.
func demoPackets(ctx context.Context, scene []demoLine) ([]audio.Packet, error) {
	var out []audio.Packet
	at := time.Unix(0, 0)
	seq := map[string]uint16{}
	ts := map[string]uint32{}
	for i, l := range scene {
		pcm, err := tts.Espeak{}.Synthesize(ctx, l.text, tts.Voice{Name: l.voice})
		if err != nil {
			return nil, fmt.Errorf("speaking line %d with espeak-ng (Debian: espeak-ng): %w", i+1, err)
		}
		enc, err := playback.NewEncoder(48000)
		if err != nil {
			return nil, err
		}
		frames, err := enc.Frames(pcm)
		if err != nil {
			return nil, err
		}
		for _, fr := range frames {
			at = at.Add(playback.FrameDuration)
			out = append(out, audio.Packet{UserID: l.user, SSRC: uint32(1000 + len(seq)), Sequence: seq[l.user],
				Timestamp: ts[l.user], Opus: fr, Received: at})
			seq[l.user]++
			ts[l.user] += 960
		}
		at = at.Add(time.Second)
		ts[l.user] += 50 * 960
	}
	return out, nil
}

// demoDeliver plays packets into the router in simulated time, ticking
// every 20 ms as the live connection does, and long enough after the last
// packet for its utterance to end.
func demoDeliver(r *audio.Router, ps []audio.Packet) {
	if len(ps) == 0 {
		return
	}
	now := ps[0].Received
	end := ps[len(ps)-1].Received.Add(3 * time.Second)
	next := 0
	for ; !now.After(end); now = now.Add(audio.TickInterval) {
		for next < len(ps) && !ps[next].Received.After(now) {
			_ = r.Push(ps[next]) // bad packets are counted by the lane
			next++
		}
		r.Tick(now)
	}
}

// demoReply lets the addressed NPC answer, speaks the reply into a WAV
// file and records it.
func demoReply(ctx context.Context, e *env, rec *session.Session, vd *voiceDeps, t voicesession.Table, npcID string,
	line memory.TranscriptEntry, i int, outDir string) error {
	res, err := t.Agent.Turn(ctx, npc.TurnInput{NPCID: npcID, SessionID: demoSession, SpeakerID: line.SpeakerID,
		SpeakerName: line.SpeakerName, Text: line.Text}, nil)
	if err != nil {
		return err
	}
	printf(e.stdout, "         %s: %q\n", t.NPCName(npcID), res.Text)
	if err := rec.Record(ctx, memory.TranscriptEntry{SessionID: demoSession, SpeakerID: npcID, SpeakerName: t.NPCName(npcID),
		NPCID: npcID, Text: res.Text, RawText: res.Text, At: line.At.Add(line.Duration + time.Second),
		IdempotencyKey: fmt.Sprintf("demo:%d:reply", i)}); err != nil {
		return err
	}
	var speech audio.PCM
	for _, s := range res.Sentences {
		p, err := vd.synth.Synthesize(ctx, s, tts.Voice{Name: t.Voice(npcID).ID, Speed: t.Voice(npcID).Speed})
		if err != nil {
			return fmt.Errorf("speaking the reply: %w", err)
		}
		if speech.Rate == 0 {
			speech.Rate = p.Rate
		}
		speech.Samples = append(speech.Samples, audio.Resample(p, speech.Rate).Samples...)
	}
	if err := os.MkdirAll(outDir, 0o755); err != nil {
		return err
	}
	path := filepath.Join(outDir, fmt.Sprintf("%02d-%s.wav", i+1, npcID))
	if err := os.WriteFile(path, audio.EncodeWAV(speech), 0o644); err != nil {
		return err
	}
	printf(e.stdout, "         (spoken: %s, %.1f s)\n", path, speech.Duration())
	return nil
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
