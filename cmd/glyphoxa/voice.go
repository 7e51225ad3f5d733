package main

import (
	"context"
	"errors"
	"log/slog"
	"os/exec"
	"time"

	"github.com/bwmarrin/discordgo"

	"github.com/glyphoxa/glyphoxa/bot"
	"github.com/glyphoxa/glyphoxa/bot/voicesession"
	"github.com/glyphoxa/glyphoxa/cmd/glyphoxa/internal/config"
	"github.com/glyphoxa/glyphoxa/correction"
	"github.com/glyphoxa/glyphoxa/internal/clock"
	"github.com/glyphoxa/glyphoxa/internal/llm"
	"github.com/glyphoxa/glyphoxa/internal/reconnect"
	"github.com/glyphoxa/glyphoxa/lifecycle/contextmgr"
	"github.com/glyphoxa/glyphoxa/lifecycle/ledger"
	"github.com/glyphoxa/glyphoxa/lifecycle/postsession"
	"github.com/glyphoxa/glyphoxa/memory/access"
	"github.com/glyphoxa/glyphoxa/table"
	"github.com/glyphoxa/glyphoxa/voice/audio"
	"github.com/glyphoxa/glyphoxa/voice/conn"
	"github.com/glyphoxa/glyphoxa/voice/dave"
	"github.com/glyphoxa/glyphoxa/voice/realtime"
	"github.com/glyphoxa/glyphoxa/voice/stt"
	"github.com/glyphoxa/glyphoxa/voice/tts"
)

// llmCorrectionTimeout bounds the LLM pass of one live utterance: it delays
// the NPC's answer by as much.
const llmCorrectionTimeout = 1500 * time.Millisecond

// tableProviders builds the table's providers from the configuration:
// speech-to-text, speech synthesis, the LLM (one client for NPCs,
// summaries and extraction), the LLM pass of name correction and the
// embedder. Close releases what they hold.
func tableProviders(cfg config.Config, log *slog.Logger, clk clock.Clock, onUsage func(llm.Usage)) (table.Providers, func() error, error) {
	var p table.Providers
	rec, err := newRecognizer(cfg.Providers.STT, log)
	if err != nil {
		return p, nil, err
	}
	p.STT, p.STTProvider, p.Language = rec, cfg.Providers.STT.Provider, cfg.Providers.STT.Language
	p.STTStreaming = cfg.Providers.STT.Streaming
	if p.STTProvider == "" {
		p.STTProvider = table.ProviderPocketsphinx
	}
	// The recogniser and the synthesiser may keep programs running
	// (pocketsphinx, festival): release stops them.
	var held []any
	release := func() error {
		var errs []error
		for _, h := range held {
			if c, ok := h.(interface{ Close() error }); ok {
				errs = append(errs, c.Close())
			}
		}
		return errors.Join(errs...)
	}
	held = append(held, rec)
	synth, err := newSynthesizer(cfg.Providers.TTS, log)
	if err != nil {
		return p, release, err
	}
	held = append(held, synth)
	name, voice := cfg.Providers.TTS.Provider, cfg.Providers.TTS.Voice
	if name == "" {
		name = "local"
	}
	if l, ok := synth.(*tts.Local); ok && voice == "" {
		voice = l.Best().Voice().Name
	}
	p.Speaker = &table.Voices{Default: synth, DefaultVoice: voice,
		ByProvider: map[string]tts.Synthesizer{name: synth, "espeak": tts.Espeak{}}, Clock: clk, Logger: log}
	if p.Embedder, err = newEmbedder(cfg); err != nil {
		return p, release, err
	}
	if rc := cfg.Providers.Realtime; rc.Configured() {
		p.Realtime = &table.Realtime{URL: rc.URL, APIKey: rc.APIKey, Model: rc.Model, Voice: rc.Voice, IdleTimeout: rc.IdleTimeout.Std(),
			ToolTimeout: rc.ToolTimeout.Std()}
		if rc.Beta {
			p.Realtime.Protocol = realtime.Beta
		}
		p.Realtime.MaxAudio = time.Duration(rc.MaxMinutes * float64(time.Minute))
	}
	if !cfg.Providers.LLM.Configured() {
		// Without an LLM, the promises, debts and handovers said outright
		// are still found after the session (waiting for the DM's review).
		p.Extractor = ledger.Extractor{}
		return p, release, nil
	}
	client, err := newLLM(cfg, onUsage)
	if err != nil {
		return p, release, err
	}
	p.LLM = client
	p.Summarizer = contextmgr.NewOpenAISummarizer(client, client.Model())
	p.Extractor = ledger.Extractor{Next: postsession.NewOpenAIExtractor(client, client.Model())}
	if cfg.Correction.LLM {
		if p.LLMCorrector, err = newLLMCorrector(cfg, correction.WithHTTPClient(llm.CountingHTTPClient(nil, onUsage))); err != nil {
			return p, release, err
		}
	}
	return p, release, nil
}

// newLLMCorrector returns the LLM pass of name correction on providers.llm.
func newLLMCorrector(cfg config.Config, opts ...correction.LLMOption) (*correction.LLMCorrector, error) {
	p := cfg.Providers.LLM
	return correction.NewLLMCorrector(p.BaseURL, p.APIKey, p.Model, append([]correction.LLMOption{correction.WithLLMTimeout(llmCorrectionTimeout)}, opts...)...)
}

// tableSettings are the table's settings from the configuration.
func tableSettings(cfg config.Config) table.Settings {
	lc := cfg.Lifecycle
	return table.Settings{
		Audio:             audio.Config{Endpoint: cfg.Voice.EndOfTurn.Std(), MaxUtterance: cfg.Voice.MaxUtterance.Std(), HoldAfter: cfg.Voice.BargeIn.Std()},
		PhoneticThreshold: cfg.Correction.PhoneticThreshold,
		FuzzyThreshold:    cfg.Correction.FuzzyThreshold,
		LowConfidence:     cfg.Correction.LowConfidence,
		HotContextTokens:  cfg.Memory.HotContextTokens,
		ToolTime:          cfg.Memory.ToolTime.Std(),
		RecentWindow:      cfg.Memory.RecentWindow.Std(),
		MaxContextTokens:  lc.MaxContextTokens,
		SummarizeAt:       lc.SummarizeAt,
		StateDir:          lc.SpoolDir,
		ConsolidateEvery:  lc.ConsolidateEvery.Std(),
		Probe:             reconnect.Backoff{Initial: lc.Reconnect.Initial.Std(), Max: lc.Reconnect.Max.Std()},
		SpoolMaxBytes:     lc.SpoolMaxBytes,
		ShutdownTimeout:   lc.ShutdownTimeout.Std(),
		DrainTimeout:      lc.DrainTimeout.Std(),
		LeaveWhenEmpty:    cfg.Discord.LeaveWhenEmptyAfter.Std(),
		MaxLength:         cfg.Discord.MaxSessionLength.Std(),
		MergeWait:         cfg.Voice.MergeWait.Std(),
		DigestEvery:       lc.DigestEvery.Std(),
		DigestLines:       lc.DigestLines,
	}
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
		if c.Streaming {
			return &stt.OpenAIRealtime{APIKey: c.APIKey, BaseURL: c.BaseURL, Model: c.Model}, nil
		}
		return &stt.OpenAI{APIKey: c.APIKey, BaseURL: c.BaseURL, Model: c.Model}, nil
	}
	return nil, errors.New("providers.stt.provider: want pocketsphinx, deepgram or openai")
}

// newSynthesizer returns the configured speech synthesis.
func newSynthesizer(c config.TTS, log *slog.Logger) (tts.Synthesizer, error) {
	switch c.Provider {
	case "", "local", "espeak", "festival", "flite":
		// The best offline voice installed: festival or flite, which
		// speech-to-text understands far better, else espeak-ng.
		l, err := tts.NewLocal(tts.LocalConfig{Logger: log})
		if err != nil {
			log.Warn("offline speech synthesis needs festival, flite or espeak-ng (Debian packages); NPCs stay silent until one is installed or providers.tts is set", "err", err)
			return tts.Espeak{}, nil
		}
		return l, nil
	case "openai":
		return &tts.OpenAI{APIKey: c.APIKey, BaseURL: c.BaseURL, Model: c.Model}, nil
	case "elevenlabs":
		return &tts.ElevenLabs{APIKey: c.APIKey, BaseURL: c.BaseURL, Model: c.Model}, nil
	}
	return nil, errors.New("providers.tts.provider: want local (festival, flite or espeak-ng), openai or elevenlabs")
}

// voiceManager returns the voice session manager of a Discord session.
func voiceManager(door *access.Door, cfg config.Config, p table.Providers, sess *discordgo.Session,
	observer table.Observer, owns func(guildID string) bool, confirm func(ctx context.Context, guildID string) (bool, error),
	holder func(guildID string) func() bool, log *slog.Logger) (*voicesession.Manager, error) {
	joiner := bot.NewJoiner(sess)
	for _, h := range joiner.Handlers() {
		sess.AddHandler(h)
	}
	link := voicesession.NewGatewayLink(joiner, voiceConnConfig(cfg, log))
	link.FollowWhileHeld(holder)
	return voicesession.New(voicesession.Config{Door: door, Link: link, Providers: p, Settings: tableSettings(cfg),
		UserName: memberName(sess), Observer: observer, Owns: owns, Confirm: confirm, Holder: holder, Continuity: cfg.Lifecycle.Continuity,
		Logger: log})
}

// voiceConnConfig is the configuration of the bot's voice connections:
// DAVE (refusing unencrypted voice with voice.require_e2ee) and the
// reconnect backoff.
func voiceConnConfig(cfg config.Config, log *slog.Logger) conn.Config {
	var daveOpts []dave.Option
	if cfg.Voice.RequireE2EE {
		daveOpts = append(daveOpts, dave.RequireE2EE())
	}
	rc := cfg.Lifecycle.Reconnect
	return conn.Config{Logger: log, NewE2EE: dave.NewE2EE(log, daveOpts...),
		Backoff: conn.Backoff{Initial: rc.Initial.Std(), Max: rc.Max.Std(), Attempts: rc.Attempts}}
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
