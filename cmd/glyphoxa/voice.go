package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/bwmarrin/discordgo"
	openai "github.com/sashabaranov/go-openai"

	"github.com/glyphoxa/glyphoxa/bot"
	"github.com/glyphoxa/glyphoxa/bot/voicesession"
	"github.com/glyphoxa/glyphoxa/cmd/glyphoxa/internal/config"
	"github.com/glyphoxa/glyphoxa/correction"
	"github.com/glyphoxa/glyphoxa/lifecycle/contextmgr"
	"github.com/glyphoxa/glyphoxa/lifecycle/postsession"
	"github.com/glyphoxa/glyphoxa/lifecycle/reconnect"
	"github.com/glyphoxa/glyphoxa/lifecycle/session"
	"github.com/glyphoxa/glyphoxa/memory"
	"github.com/glyphoxa/glyphoxa/memory/chunk"
	"github.com/glyphoxa/glyphoxa/memory/postgres"
	"github.com/glyphoxa/glyphoxa/npc"
	"github.com/glyphoxa/glyphoxa/voice/audio"
	"github.com/glyphoxa/glyphoxa/voice/conn"
	"github.com/glyphoxa/glyphoxa/voice/dave"
	"github.com/glyphoxa/glyphoxa/voice/playback"
	"github.com/glyphoxa/glyphoxa/voice/stt"
	"github.com/glyphoxa/glyphoxa/voice/tts"
)

// voiceDeps are the parts of a voice session that come from the
// configuration: speech-to-text, speech synthesis, the campaign table and
// the session log writer. serve and demo share them.
type voiceDeps struct {
	store *postgres.Store
	cfg   config.Config
	log   *slog.Logger
	stt   stt.Recognizer
	synth tts.Synthesizer
	llm   *openai.Client // nil without an LLM endpoint

	mu       sync.Mutex
	sessions map[string]*session.Session // by "campaign/session"
}

func newVoiceDeps(store *postgres.Store, cfg config.Config, log *slog.Logger) (*voiceDeps, error) {
	d := &voiceDeps{store: store, cfg: cfg, log: log, sessions: map[string]*session.Session{}}
	var err error
	if d.stt, err = newRecognizer(cfg.Providers.STT, log); err != nil {
		return nil, err
	}
	if d.synth, err = newSynthesizer(cfg.Providers.TTS, log); err != nil {
		return nil, err
	}
	if cfg.Providers.LLM.Configured() {
		oc := openai.DefaultConfig(cfg.Providers.LLM.APIKey)
		oc.BaseURL = cfg.Providers.LLM.BaseURL
		d.llm = openai.NewClientWithConfig(oc)
	}
	return d, nil
}

// Close releases the speech-to-text engine's files.
func (d *voiceDeps) Close() error {
	if c, ok := d.stt.(interface{ Close() error }); ok {
		return c.Close()
	}
	return nil
}

// newRecognizer returns the configured speech-to-text engine.
func newRecognizer(c config.STT, log *slog.Logger) (stt.Recognizer, error) {
	switch c.Provider {
	case "", "pocketsphinx":
		if _, err := exec.LookPath("pocketsphinx_continuous"); err != nil {
			log.Warn("offline speech-to-text needs pocketsphinx_continuous (Debian: pocketsphinx, pocketsphinx-en-us); voice sessions will record nothing until it is installed or providers.stt is set")
		}
		return &stt.Sphinx{}, nil
	case "deepgram":
		return &stt.Deepgram{APIKey: c.APIKey, BaseURL: c.BaseURL, Model: c.Model, Logger: log}, nil
	case "openai":
		return &stt.OpenAI{APIKey: c.APIKey, BaseURL: c.BaseURL, Model: c.Model}, nil
	}
	return nil, fmt.Errorf("providers.stt.provider %q: want pocketsphinx, deepgram or openai", c.Provider)
}

// newSynthesizer returns the configured speech synthesis.
func newSynthesizer(c config.TTS, log *slog.Logger) (tts.Synthesizer, error) {
	switch c.Provider {
	case "", "espeak":
		if _, err := exec.LookPath("espeak-ng"); err != nil {
			log.Warn("offline speech synthesis needs espeak-ng (Debian: espeak-ng); NPCs stay silent until it is installed or providers.tts is set")
		}
		return tts.Espeak{}, nil
	case "openai":
		return &tts.OpenAI{APIKey: c.APIKey, BaseURL: c.BaseURL, Model: c.Model}, nil
	case "elevenlabs":
		return &tts.ElevenLabs{APIKey: c.APIKey, BaseURL: c.BaseURL, Model: c.Model}, nil
	}
	return nil, fmt.Errorf("providers.tts.provider %q: want espeak, openai or elevenlabs", c.Provider)
}

// manager returns the voice session manager of a Discord session.
func (d *voiceDeps) manager(sess *discordgo.Session, observer voicesession.Observer) (*voicesession.Manager, error) {
	joiner := bot.NewJoiner(sess)
	for _, h := range joiner.Handlers() {
		sess.AddHandler(h)
	}
	rc := d.cfg.Lifecycle.Reconnect
	link := voicesession.NewGatewayLink(joiner, conn.Config{Logger: d.log, NewE2EE: dave.NewE2EE(d.log),
		Backoff: conn.Backoff{Initial: rc.Initial.Std(), Max: rc.Max.Std(), Attempts: rc.Attempts}})
	return voicesession.New(voicesession.Config{
		Store:   d.store,
		Link:    link,
		STT:     transcriber{r: d.stt, language: d.cfg.Providers.STT.Language},
		Table:   d.table,
		Speaker: speaker{synth: d.synth, voice: d.cfg.Providers.TTS.Voice, log: d.log},
		Recorder: func(ctx context.Context, camp *postgres.Campaign, sessionID string) (voicesession.Recorder, error) {
			return d.recorder(ctx, camp, sessionID)
		},
		Audio:          audio.Config{Endpoint: d.cfg.Voice.EndOfTurn.Std(), MaxUtterance: d.cfg.Voice.MaxUtterance.Std(), HoldAfter: d.cfg.Voice.BargeIn.Std()},
		LeaveWhenEmpty: d.cfg.Discord.LeaveWhenEmptyAfter.Std(),
		MaxLength:      d.cfg.Discord.MaxSessionLength.Std(),
		UserName:       memberName(sess),
		AfterSession:   d.afterSession,
		Observer:       observer,
		Logger:         d.log,
	})
}

// memberName is a guild member's display name, from discordgo's state.
func memberName(sess *discordgo.Session) func(guildID, userID string) string {
	return func(guildID, userID string) string {
		if m, err := sess.State.Member(guildID, userID); err == nil && m != nil {
			if m.Nick != "" {
				return m.Nick
			}
			if m.User != nil {
				if m.User.GlobalName != "" {
					return m.User.GlobalName
				}
				return m.User.Username
			}
		}
		if m, err := sess.GuildMember(guildID, userID); err == nil && m != nil && m.User != nil {
			_ = sess.State.MemberAdd(m)
			if m.Nick != "" {
				return m.Nick
			}
			return m.User.Username
		}
		return userID
	}
}

// table assembles a campaign's parts for a voice session.
func (d *voiceDeps) table(ctx context.Context, camp *postgres.Campaign) (voicesession.Table, error) {
	ents, err := camp.Graph().FindEntities(ctx, memory.EntityFilter{})
	if err != nil {
		return voicesession.Table{}, fmt.Errorf("reading the campaign's entities: %w", err)
	}
	cents := correction.FromMemory(ents)
	m, err := correction.NewMatcher(correction.WithPhoneticThreshold(d.cfg.Correction.PhoneticThreshold),
		correction.WithFuzzyThreshold(d.cfg.Correction.FuzzyThreshold))
	if err != nil {
		return voicesession.Table{}, err
	}
	copts := []correction.Option{correction.WithMatcher(m), correction.WithEntities(cents),
		correction.WithLowConfidence(d.cfg.Correction.LowConfidence), correction.WithLogger(d.log)}
	if d.cfg.Correction.LLM && d.cfg.Providers.LLM.Configured() {
		lc, err := newLLMCorrector(d.cfg)
		if err != nil {
			return voicesession.Table{}, err
		}
		copts = append(copts, correction.WithLLM(lc))
	}
	pipe, err := correction.NewPipeline(copts...)
	if err != nil {
		return voicesession.Table{}, err
	}
	personas := map[string]npc.Persona{}
	for _, e := range ents {
		if e.Type == memory.EntityNPC {
			personas[e.ID] = npc.PersonaFromEntity(e)
		}
	}
	t := voicesession.Table{
		Correct: corrector{pipe},
		Names:   newNameFinder(ents, pipe),
		IsNPC:   func(id string) bool { _, ok := personas[id]; return ok },
		NPCName: func(id string) string { return personas[id].Name },
		Voice:   func(id string) npc.Voice { return personas[id].Voice },
		Hints:   hints(cents),
	}
	if d.cfg.Providers.LLM.Configured() {
		client, err := newLLM(d.cfg)
		if err != nil {
			return voicesession.Table{}, err
		}
		agent, err := npc.NewAgent(npc.Config{LLM: client, Context: newHotContext(d.store, camp, d.cfg), Graph: camp.Graph(),
			Heard: camp.Sessions(), Recall: newRecaller(d.store, camp, d.cfg), ContextTokens: d.cfg.Memory.HotContextTokens})
		if err != nil {
			return voicesession.Table{}, err
		}
		t.Agent = agent
	}
	return t, nil
}

// hints are the campaign's names for keyword boosting, aliases after
// names, at most 200.
func hints(es []correction.Entity) []string {
	ranked := correction.Rank(es, correction.Salience{})
	var out []string
	seen := map[string]bool{}
	add := func(s string) {
		if k := strings.ToLower(s); s != "" && !seen[k] && len(out) < 200 {
			seen[k] = true
			out = append(out, s)
		}
	}
	for _, r := range ranked {
		add(r.Name)
	}
	for _, r := range ranked {
		for _, a := range r.Aliases {
			add(a)
		}
	}
	return out
}

// recorder opens the lifecycle session that stores a voice session's lines:
// journaled at once, consolidated into the session log, spooled through a
// database outage, and processed into long-term memory at the end.
func (d *voiceDeps) recorder(ctx context.Context, camp *postgres.Campaign, sessionID string) (voicesession.Recorder, error) {
	lc := d.cfg.Lifecycle
	var summarizer contextmgr.Summarizer = noSummarizer{}
	if d.llm != nil {
		summarizer = contextmgr.NewOpenAISummarizer(d.llm, d.cfg.Providers.LLM.Model)
	}
	s, err := session.Start(ctx, session.Config{
		SessionID:        sessionID,
		Log:              camp.Sessions(),
		Graph:            camp.Graph(),
		Index:            camp.Index(),
		Ping:             d.store.Ping,
		StateDir:         filepath.Join(lc.SpoolDir, camp.ID()),
		Summarizer:       summarizer,
		MaxTokens:        lc.MaxContextTokens,
		ConsolidateEvery: lc.ConsolidateEvery.Std(),
		Probe:            reconnect.Backoff{Initial: lc.Reconnect.Initial.Std(), Max: lc.Reconnect.Max.Std()},
		MaxSpoolBytes:    lc.SpoolMaxBytes,
		PostSession:      d.postProcessor(camp),
		ShutdownTimeout:  lc.ShutdownTimeout.Std(),
		Logger:           d.log.With("campaign", camp.ID(), "session", sessionID),
	})
	if err != nil {
		return nil, err
	}
	d.mu.Lock()
	d.sessions[camp.ID()+"/"+sessionID] = s
	d.mu.Unlock()
	return lifecycleRecorder{s}, nil
}

// afterSession waits for a session's post-session processing and releases
// it.
func (d *voiceDeps) afterSession(ctx context.Context, campaign, sessionID string) error {
	key := campaign + "/" + sessionID
	d.mu.Lock()
	s := d.sessions[key]
	delete(d.sessions, key)
	d.mu.Unlock()
	if s == nil {
		return nil
	}
	rep, werr := s.Wait(ctx)
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), d.cfg.Lifecycle.ShutdownTimeout.Std())
	defer cancel()
	if err := s.Close(cctx); err != nil {
		werr = errors.Join(werr, err)
	}
	if werr == nil {
		d.log.Info("session processed into long-term memory", "campaign", campaign, "session", sessionID, "report", fmt.Sprintf("%+v", rep))
	}
	return werr
}

// postProcessor chunks and embeds a session, and extracts its facts when an
// LLM is configured.
func (d *voiceDeps) postProcessor(camp *postgres.Campaign) session.PostProcessor {
	emb, err := newEmbedder(d.cfg)
	l2 := postsession.L2Func(func(ctx context.Context, sessionID string) error {
		if err != nil {
			return err
		}
		_, perr := chunk.Process(ctx, camp, emb, chunk.Options{}, sessionID)
		return perr
	})
	if d.llm == nil {
		return chunkOnly{l2: l2, log: d.log}
	}
	p, perr := postsession.New(postsession.Config{L2: l2, Transcript: camp.Sessions(), Graph: camp.Graph(),
		Extractor: postsession.NewOpenAIExtractor(d.llm, d.cfg.Providers.LLM.Model),
		Progress:  postsession.NewPGProgress(d.store.Pool(), camp.ID()), Logger: d.log})
	if perr != nil {
		d.log.Error("fact extraction is not available", "err", perr)
		return chunkOnly{l2: l2, log: d.log}
	}
	return p
}

// chunkOnly processes a session without an LLM: chunks and embeddings only.
type chunkOnly struct {
	l2  postsession.L2Func
	log *slog.Logger
}

func (c chunkOnly) Run(ctx context.Context, sessionID string) (postsession.Report, error) {
	c.log.Info("fact extraction skipped: no LLM is configured (providers.llm)", "session", sessionID)
	return postsession.Report{}, c.l2(ctx, sessionID)
}

// noSummarizer stands in when no LLM is configured: summarising fails, so
// the conversation is kept whole (nothing is dropped).
type noSummarizer struct{}

func (noSummarizer) Summarize(context.Context, []contextmgr.Message) (string, error) {
	return "", errors.New("no LLM is configured to summarise the conversation (providers.llm)")
}

// lifecycleRecorder records a voice session's lines through its lifecycle
// session.
type lifecycleRecorder struct{ s *session.Session }

func (r lifecycleRecorder) Record(ctx context.Context, e memory.TranscriptEntry) error {
	return r.s.Record(ctx, e)
}

// Close flushes the session and starts its post-session processing.
func (r lifecycleRecorder) Close(ctx context.Context) error { return r.s.End(ctx) }

func (r lifecycleRecorder) IsDegraded() bool { return r.s.IsDegraded() }

func (r lifecycleRecorder) SpoolPending() int { return r.s.Memory().Stats().Pending + r.s.Pending() }

// transcriber adapts a speech-to-text engine to the voice session.
type transcriber struct {
	r        stt.Recognizer
	language string
}

func (t transcriber) Transcribe(ctx context.Context, pcm audio.PCM, hints []string) (voicesession.Transcript, error) {
	res, err := t.r.Transcribe(ctx, pcm, stt.Hints{Keyterms: hints, Language: t.language})
	if err != nil {
		return voicesession.Transcript{}, err
	}
	out := voicesession.Transcript{Text: res.Text}
	for _, w := range res.Words {
		out.Words = append(out.Words, voicesession.Word{Text: w.Text, Confidence: w.Confidence})
	}
	return out, nil
}

// corrector adapts the correction pipeline (stage 1, inline).
type corrector struct{ p *correction.Pipeline }

func (c corrector) Correct(ctx context.Context, t voicesession.Transcript) (string, error) {
	u := correction.Utterance{Text: t.Text}
	for _, w := range t.Words {
		u.Words = append(u.Words, correction.Word{Text: w.Text, Confidence: w.Confidence})
	}
	res := c.p.Correct(u)
	if c.p.HasLLM() {
		// The LLM pass is bounded (llmCorrectionTimeout); when it fails or
		// is late the phonetic result stands.
		refined, err := c.p.Refine(ctx, u, res)
		return refined.Text, err
	}
	return res.Text, nil
}

// llmCorrectionTimeout bounds the LLM pass of one live utterance: it delays
// the NPC's answer by as much.
const llmCorrectionTimeout = 1500 * time.Millisecond

// newLLMCorrector returns the LLM pass of name correction on providers.llm.
func newLLMCorrector(cfg config.Config) (*correction.LLMCorrector, error) {
	p := cfg.Providers.LLM
	return correction.NewLLMCorrector(p.BaseURL, p.APIKey, p.Model, correction.WithLLMTimeout(llmCorrectionTimeout))
}

// speaker voices NPCs with the configured synthesis and the paced player.
type speaker struct {
	synth tts.Synthesizer
	voice string // the default voice
	log   *slog.Logger
}

type writerFunc func([]byte) error

func (f writerFunc) WriteOpus(b []byte) error { return f(b) }

func (s speaker) Speak(ctx context.Context, v npc.Voice, sentences <-chan string, send func([]byte) error) ([]string, error) {
	p, err := playback.New(writerFunc(send), playback.WithLogger(s.log))
	if err != nil {
		return nil, err
	}
	name := v.ID
	if name == "" {
		name = s.voice
	}
	res, err := p.Play(ctx, sentences, s.synth, tts.Voice{Name: name, Speed: v.Speed})
	return res.Said, err
}

// nameFinder finds the names of a campaign's entities in corrected text:
// names and aliases as whole words, and near misses the phonetic matcher
// still recognises.
type nameFinder struct {
	names []nameEntry // longest first
	pipe  *correction.Pipeline
}

type nameEntry struct{ id, lower string }

func newNameFinder(es []memory.Entity, pipe *correction.Pipeline) nameFinder {
	f := nameFinder{pipe: pipe}
	for _, e := range es {
		for _, n := range append([]string{e.Name}, e.Aliases...) {
			if strings.TrimSpace(n) != "" {
				f.names = append(f.names, nameEntry{e.ID, strings.ToLower(n)})
			}
		}
	}
	sort.SliceStable(f.names, func(i, j int) bool { return len(f.names[i].lower) > len(f.names[j].lower) })
	return f
}

func (f nameFinder) FindNames(text string) []npc.Mention {
	lower := strings.ToLower(text)
	if len(lower) != len(text) {
		lower = text // offsets must stay those of text
	}
	taken := make([]bool, len(text))
	var out []npc.Mention
	mark := func(s, e int, id string, score float64) {
		for i := s; i < e; i++ {
			if taken[i] {
				return
			}
		}
		for i := s; i < e; i++ {
			taken[i] = true
		}
		out = append(out, npc.Mention{EntityID: id, Start: s, End: e, Score: score})
	}
	for _, n := range f.names {
		for from := 0; from < len(lower); {
			k := strings.Index(lower[from:], n.lower)
			if k < 0 {
				break
			}
			s, e := from+k, from+k+len(n.lower)
			from = e
			if wordEdge(lower, s-1) && wordEdge(lower, e) {
				mark(s, e, n.id, 1)
			}
		}
	}
	// Stage 1 of the correction pipeline reports the near misses it would
	// restore, with their offsets in text.
	for _, sub := range f.pipe.Correct(correction.Utterance{Text: text}).Substitutions {
		mark(sub.Start, sub.End, sub.EntityID, sub.Score)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Start < out[j].Start })
	return out
}

// wordEdge reports whether byte i of s is outside a word.
func wordEdge(s string, i int) bool {
	if i < 0 || i >= len(s) {
		return true
	}
	r, _ := utf8.DecodeRuneInString(s[i:])
	return !unicode.IsLetter(r) && !unicode.IsDigit(r)
}
