package voicesession

import (
	"context"
	"log/slog"

	"github.com/glyphoxa/glyphoxa/bot"
	"github.com/glyphoxa/glyphoxa/lifecycle/continuity"
	"github.com/glyphoxa/glyphoxa/lifecycle/guard"
	"github.com/glyphoxa/glyphoxa/memory"
	"github.com/glyphoxa/glyphoxa/memory/access"
	"github.com/glyphoxa/glyphoxa/table"
)

var _ bot.ContinuityCards = (*Manager)(nil)

// ContinuityCards is the board of the continuity cards the sessions of
// this process raised: the bot settles them, the console shows them.
func (m *Manager) ContinuityCards() *continuity.Board { return m.cfg.Cards }

// watchContinuity checks each line of the session against canon (see
// lifecycle/continuity) when Config.Continuity is on: canon is loaded
// once now and refreshed from the change log by a loop that stop ends.
// A contradiction makes a card on the board, posted to the DM by
// req.Contradicted.
func (m *Manager) watchContinuity(ctx context.Context, req bot.StartRequest, camp *access.Campaign, tcfg *table.Config, log *slog.Logger) (stop func()) {
	if !m.cfg.Continuity {
		return func() {}
	}
	log = log.With("subsystem", "continuity")
	chk, err := continuity.New(continuity.Config{Source: continuity.CampaignSource(camp), Clock: m.cfg.Clock, Logger: log})
	if err != nil {
		log.Warn("live continuity is off for this session", "err", err)
		return func() {}
	}
	if _, err := chk.Refresh(ctx); err != nil {
		log.Warn("canon could not be read at the start of the session; lines are checked once it can", "err", err)
	}
	cctx, cancel := context.WithCancel(m.ctx)
	m.bg.Add(1)
	go func() { defer m.bg.Done(); chk.Run(cctx) }()
	sessionID := tcfg.SessionID
	raise := func(f continuity.Finding, line continuity.Line) {
		card := m.cfg.Cards.Add(continuity.Card{Campaign: req.Campaign, GuildID: req.GuildID, Finding: f, Line: line,
			Raised: m.clk.Now()})
		log.Info("a line contradicts canon: a card is raised for the DM", "card", card.ID, "kind", f.Kind,
			"claim", f.Claim, "canon_fact", f.Canon.ID, "unsaid", card.Unsaid)
		m.bg.Add(1)
		go func() {
			defer m.bg.Done()
			// Stored before it is posted, so that its buttons find it in
			// any process; through the session's outage guard, which
			// spools it while the database is down (it outlives this
			// process, like the lines). Without the guard (the session
			// ended) it stays on the board and is stored by the next Save.
			put := camp.PutContinuityCard
			if g := m.guardOf(req.GuildID, sessionID); g != nil {
				put = g.PutCard
			}
			if err := m.cfg.Cards.SaveThrough(m.ctx, req.Campaign, put); err != nil {
				log.Warn("a continuity card could not be stored yet; it is kept in this process until it can", "card", card.ID, "err", err)
			}
			if req.Contradicted != nil && req.Contradicted(card) {
				m.cfg.Cards.Posted(card.ID, m.clk.Now())
			}
		}()
	}
	tcfg.OnRecorded = func(e memory.TranscriptEntry) {
		for _, f := range chk.Check(e.SpeakerName, e.Text) {
			raise(f, continuity.Line{SessionID: e.SessionID, SpeakerID: e.SpeakerID, Speaker: e.SpeakerName, Text: e.Text,
				At: e.At, Key: e.IdempotencyKey})
		}
	}
	tcfg.CheckSentence = func(npcID, sentence string) string {
		canon := chk.Canon()
		fs := canon.CheckReply(npcID, sentence)
		if len(fs) == 0 {
			return ""
		}
		for _, f := range fs {
			f.Unsaid = true
			raise(f, continuity.Line{SessionID: sessionID, SpeakerID: npcID, Speaker: canon.Name(npcID), Text: sentence,
				At: m.clk.Now().UTC()})
		}
		return fs[0].Claim + " (canon: " + fs[0].Canon.Text + ")"
	}
	return cancel
}

// guardOf is the outage guard of the guild's session id while it runs
// here, nil otherwise.
func (m *Manager) guardOf(guildID, sessionID string) *guard.Guard {
	m.mu.Lock()
	r := m.sessions[guildID]
	m.mu.Unlock()
	if r == nil || r.s == nil || r.s.ID() != sessionID {
		return nil
	}
	return r.s.Memory().Memory()
}

// forgotten takes a player forgotten late (their forget-me waited in the
// outage spool until the database was back) off this process's board too,
// and hands what was deleted, with the board's cards, to req.Forgotten on
// a goroutine of the manager's (it takes the cards' direct messages down,
// a few REST calls per DM).
func (m *Manager) forgotten(req bot.StartRequest, speakerID string, rep memory.ForgetReport) {
	rep.Cards = append(rep.Cards, m.cfg.Cards.ForgetSpeaker(req.Campaign, speakerID)...)
	m.log.Info("a forget-me queued during an outage ran", "campaign", req.Campaign, "cards", len(rep.Cards),
		"sessions", len(rep.Sessions))
	if req.Forgotten == nil {
		return
	}
	m.bg.Add(1)
	go func() {
		defer m.bg.Done()
		req.Forgotten(speakerID, rep)
	}()
}
