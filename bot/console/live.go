package console

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/glyphoxa/glyphoxa/bot"
	"github.com/glyphoxa/glyphoxa/internal/clock"
	"github.com/glyphoxa/glyphoxa/lifecycle/continuity"
	"github.com/glyphoxa/glyphoxa/memory/access"
)

// LiveSource reports what is happening in a campaign's running session. It
// reads the same numbers as /metrics (the voice session manager and
// internal/metrics feed both); the command that runs the bot wires it.
// Implementations must be safe for concurrent use and must not block.
//
// A console shows the live status of tables in other processes too: each
// process that runs tables publishes its LiveSource to the database with a
// [LivePublisher], and the Live page reads the freshest report.
type LiveSource interface {
	Live(campaign string) LiveStatus
}

// LiveFunc adapts a function to a LiveSource.
type LiveFunc func(campaign string) LiveStatus

// Live calls f.
func (f LiveFunc) Live(campaign string) LiveStatus { return f(campaign) }

// LiveStatus is a snapshot of a campaign's running session.
type LiveStatus struct {
	// Running is false when no session is running; the rest is then zero.
	Running   bool      `json:"running"`
	SessionID string    `json:"session_id,omitempty"`
	StartedAt time.Time `json:"started_at,omitzero"`
	// Speaking are the display names of who is speaking now.
	Speaking []string `json:"speaking"`
	// Turns are the latest NPC turns, newest first.
	Turns []Turn `json:"turns"`
	// MemoryDegraded is true while the database is unreachable: the
	// session's lines go to the spool, and the console's memory door
	// (Config.Door) refuses reads until it answers again.
	MemoryDegraded bool `json:"memory_degraded"`
	// PendingWrites are lines waiting to reach the database.
	PendingWrites int `json:"pending_writes"`
	// SpoolBytes is the size of the outage spool on disk.
	SpoolBytes int64 `json:"spool_bytes"`
	// Source names the process that runs the table (set by the
	// publisher, e.g. "glyphoxa serve on host-a (pid 812)").
	Source string `json:"source,omitempty"`
	// Cards are the continuity cards the table raised (lines that
	// contradict canon), newest first: open ones wait for the DM.
	Cards []continuity.Card `json:"cards"`
}

// Turn is one NPC turn and its latency per stage, each measured from the
// end of the player's speech (as the glyphoxa_turn_stage_seconds metric).
type Turn struct {
	NPC     string    `json:"npc"`
	At      time.Time `json:"at"`
	Heard   string    `json:"heard,omitempty"`
	Outcome string    `json:"outcome,omitempty"`
	Stages  []Stage   `json:"stages"`
}

// Stage is one stage of a turn (stt, correction, llm_first_token,
// tts_first_audio, …).
type Stage struct {
	Name string `json:"name"`
	// Latency is measured from the end of the player's speech.
	Latency time.Duration `json:"latency_ns"`
	// MS is Latency in milliseconds, for the page.
	MS int64 `json:"ms"`
}

// Timing of the live feed through the database.
const (
	// LiveInterval is how often a LivePublisher reports.
	LiveInterval = 2 * time.Second
	// LiveFresh is how old a report may be and still show: a process that
	// stopped without withdrawing its report (killed) drops out after it.
	LiveFresh = 5 * LiveInterval
)

// LivePublisher writes a LiveSource's status of each campaign it runs
// tables for to the database every Interval, so that a console in any
// process on the same database shows it; it withdraws the reports when it
// stops. Run owns its goroutine-free loop; the caller owns Run.
type LivePublisher struct {
	// Source is the process's live status.
	Source LiveSource
	// Campaigns are DM handles of the campaigns the process runs tables for.
	Campaigns []*access.Campaign
	// Owner names the process uniquely (the lease owner, say).
	Owner string
	// Describe is the human name of the process ("glyphoxa serve on
	// host-a (pid 812)"), shown on the Live page.
	Describe string
	// Interval between reports (default LiveInterval).
	Interval time.Duration
	Clock    clock.Clock
	Logger   *slog.Logger
}

// Run reports until ctx ends, then withdraws the reports (within a few
// seconds; a process killed before that leaves reports that age out after
// LiveFresh). A report that cannot be written (the database is down) is
// logged once per outage and tried again at the next interval.
func (p *LivePublisher) Run(ctx context.Context) {
	clk := clock.OrReal(p.Clock)
	log := p.Logger
	if log == nil {
		log = slog.Default()
	}
	every := p.Interval
	if every <= 0 {
		every = LiveInterval
	}
	failing := false
	for {
		var errs []error
		for _, c := range p.Campaigns {
			st := p.Source.Live(c.ID())
			st.Source = p.Describe
			b, err := json.Marshal(st)
			if err == nil {
				err = c.PublishLive(ctx, p.Owner, b)
			}
			if err != nil && ctx.Err() == nil {
				errs = append(errs, fmt.Errorf("campaign %s: %w", c.ID(), err))
			}
		}
		switch {
		case len(errs) > 0 && !failing:
			log.Warn("the live status cannot reach the database; consoles in other processes will show no feed until it does", "err", errs[0])
			failing = true
		case len(errs) == 0 && failing:
			log.Info("the live status reaches the database again")
			failing = false
		}
		t := clk.NewTimer(every)
		select {
		case <-ctx.Done():
			t.Stop()
			wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 3*time.Second)
			for _, c := range p.Campaigns {
				if err := c.WithdrawLive(wctx, p.Owner); err != nil {
					log.Debug("withdrawing the live status", "campaign", c.ID(), "err", err)
				}
			}
			cancel()
			return
		case <-t.C():
		}
	}
}

// liveFeed says where the Live page's status comes from.
type liveFeed struct {
	// Connected is true when a table process reports for the campaign:
	// this one (Config.Live) or another through the database.
	Connected bool `json:"connected"`
	// Source names the reporting process.
	Source string `json:"source,omitempty"`
	// AgeMS is how old the report is (0 for this process's own).
	AgeMS int64 `json:"age_ms"`
	// Tables counts the processes reporting for the campaign.
	Tables int `json:"tables"`
	// Problem is why the feed could not be read, if it could not, in
	// plain words (an outage says the database cannot be reached).
	Problem string `json:"problem,omitempty"`
}

// live is the campaign's live status and where it comes from: this
// process's own table when one runs here, otherwise the freshest report
// of a table process on the same database. Memory health is this
// console's own connection's, from the memory door.
func (s *Server) live(ctx context.Context, campaign string) (LiveStatus, liveFeed) {
	var st LiveStatus
	var feed liveFeed
	if s.cfg.Live != nil {
		st = s.cfg.Live.Live(campaign)
		feed = liveFeed{Connected: true, Source: "this process", Tables: 1}
	}
	if !st.Running {
		if remote, ok, err := s.remoteLive(ctx); err != nil {
			// Said plainly (see classify); the log has the driver's words.
			_, feed.Problem = classify(err)
			s.log.Warn("reading the live feed", "err", err)
		} else if ok.Tables > 0 {
			if remote.Running || !feed.Connected {
				st, feed = remote, ok
			} else {
				feed.Tables = max(feed.Tables, ok.Tables) // this process reports there too
			}
		}
	}
	// The cards come from the store, where every process writes them;
	// when it cannot be read, the table's own report shows its cards.
	if cards, err := s.storedCards(ctx); err != nil {
		s.log.Warn("reading the continuity cards", "err", err)
		if feed.Problem == "" {
			_, feed.Problem = classify(err)
		}
	} else {
		st.Cards = cards
	}
	if s.cfg.Door.Health().Degraded {
		st.MemoryDegraded = true
	}
	if st.Speaking == nil {
		st.Speaking = []string{}
	}
	if st.Turns == nil {
		st.Turns = []Turn{}
	}
	if st.Cards == nil {
		st.Cards = []continuity.Card{}
	}
	for i := range st.Turns {
		for j := range st.Turns[i].Stages {
			st.Turns[i].Stages[j].MS = st.Turns[i].Stages[j].Latency.Milliseconds()
		}
	}
	return st, feed
}

// remoteLive reads the reports of table processes from the database: the
// newest running session, or else the newest report.
func (s *Server) remoteLive(ctx context.Context) (LiveStatus, liveFeed, error) {
	camp, err := s.openCampaign(ctx)
	if err != nil {
		return LiveStatus{}, liveFeed{}, fmt.Errorf("reading the live feed: %w", err)
	}
	feeds, err := camp.LiveFeeds(ctx, LiveFresh)
	if err != nil {
		return LiveStatus{}, liveFeed{}, err
	}
	var best LiveStatus
	var from liveFeed
	for _, f := range feeds {
		var st LiveStatus
		if err := json.Unmarshal(f.Status, &st); err != nil {
			s.log.Warn("a live report is not readable", "owner", f.Owner, "err", err)
			continue
		}
		from.Tables++
		if from.Tables == 1 || (st.Running && !best.Running) {
			best = st
			from.Source, from.AgeMS = st.Source, f.Age.Milliseconds()
			if from.Source == "" {
				from.Source = f.Owner
			}
		}
	}
	from.Connected = from.Tables > 0
	return best, from, nil
}

func (s *Server) livePage(w http.ResponseWriter, r *http.Request) {
	st, feed := s.live(r.Context(), sessionOf(r.Context()).Campaign)
	s.render(w, r, http.StatusOK, "live.html", page{Title: "Live", Nav: "live",
		Data: map[string]any{"Status": st, "Feed": feed, "FreshSeconds": int(LiveFresh.Seconds()), "Message": s.takeFlash(r)}})
}

// board is this process's board of continuity cards, nil when it runs no
// table.
func (s *Server) board() *continuity.Board {
	if cards, ok := s.cfg.Live.(bot.ContinuityCards); ok {
		return cards.ContinuityCards()
	}
	return nil
}

// storedCards are the campaign's continuity cards in the store, raised by
// any process (this one's not yet stored are written first).
func (s *Server) storedCards(ctx context.Context) ([]continuity.Card, error) {
	camp, err := s.openCampaign(ctx)
	if err != nil {
		return nil, err
	}
	return s.board().Stored(ctx, camp, continuity.MaxCards)
}

// settleCard settles a stored continuity card, raised by any process (Keep
// canon or Retcon, see continuity.SettleStored).
func (s *Server) settleCard(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	action := r.PostFormValue("action")
	if action != "keep" && action != "retcon" {
		s.fail(w, r, http.StatusBadRequest, fmt.Sprintf("Unknown choice %q: keep or retcon.", action))
		return
	}
	camp, err := s.openCampaign(ctx)
	if err != nil {
		s.failErr(w, r, err)
		return
	}
	var c continuity.Card
	if b := s.board(); b != nil {
		c, err = b.Settle(ctx, camp, r.PathValue("id"), action == "retcon", sessionOf(ctx).UserID)
	} else {
		c, err = continuity.SettleStored(ctx, camp, r.PathValue("id"), action == "retcon", sessionOf(ctx).UserID)
	}
	if err != nil {
		s.back(w, r, "/live", "⚠ "+flashErr(err))
		return
	}
	s.log.Info("continuity card settled", "card", c.ID, "status", c.Status, "by", sessionOf(ctx).UserID)
	msg := fmt.Sprintf("Card settled (%s): %s.", c.Status, c.Note)
	if c.Status == continuity.CardKept && !c.Unsaid && s.cfg.Reprocess != nil {
		if err := s.cfg.Reprocess(ctx, camp.ID(), c.Line.SessionID); err != nil {
			s.log.Warn("rebuilding a session's chunks after Keep canon", "session", c.Line.SessionID, "err", err)
			msg += fmt.Sprintf(" ⚠ Rebuilding the memory of session %s failed; run glyphoxa process.", c.Line.SessionID)
		}
	}
	s.back(w, r, "/live", msg)
}

func (s *Server) liveJSON(w http.ResponseWriter, r *http.Request) {
	st, feed := s.live(r.Context(), sessionOf(r.Context()).Campaign)
	writeJSON(w, map[string]any{"feed": feed, "status": st})
}
