package bot_test

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/glyphoxa/glyphoxa/bot"
	"github.com/glyphoxa/glyphoxa/bot/discordtest"
	"github.com/glyphoxa/glyphoxa/internal/clock/clocktest"
	"github.com/glyphoxa/glyphoxa/memory"
	"github.com/glyphoxa/glyphoxa/memory/access"
	"github.com/glyphoxa/glyphoxa/memory/postgres/pgtest"
)

// callsTo returns the recorded calls with method and path.
func (h *harness) callsTo(method, path string) []discordtest.Call {
	var out []discordtest.Call
	for _, c := range h.fake.Calls() {
		if c.Method == method && c.Path == path {
			out = append(out, c)
		}
	}
	return out
}

// levelsAbout returns the levels of the records logged about interaction
// id, counted.
func levelsAbout(logs *logRecords, id string) map[slog.Level]int {
	n := map[slog.Level]int{}
	for _, r := range logs.about(id) {
		n[r.Level]++
	}
	return n
}

// TestAnswerSurvivesAFailedExchange (HANG): a DM's /memory search was
// acknowledged and never answered once, under load; an exchange with
// Discord that fails on the way (a connection dropped, an answer lost, a
// 5xx) must not leave the member with "thinking…" when the bot could
// answer. Each case fails one kind of call once (or past discordgo's own
// retries) and the DM still gets the search's answer, exactly once.
func TestAnswerSurvivesAFailedExchange(t *testing.T) {
	t.Parallel()
	store, _ := pgtest.NewStore(t, 16)
	logs := &logRecords{}
	h := newHarnessLogged(t, bot.Deps{}, bot.Guild{ID: guildID, Campaign: campaign, DMRoleIDs: []string{dmRole}}, store, slog.New(logs))
	for _, tc := range []struct {
		name  string
		fault discordtest.Fault
		times int
		// call is which call of the interaction fails.
		call func(i discordtest.Interaction) func(discordtest.Call) bool
		// originals is how many edits of the original Discord takes (a
		// lost answer of an edit is sent again: the same edit twice).
		originals int
	}{
		{"the edit's connection dropped", discordtest.Drop, 1, patchOriginal(h), 1},
		{"the edit answered 503", discordtest.Unavailable, 1, patchOriginal(h), 1},
		// discordgo sends a 502'd request again three times by itself.
		{"the edit answered 502 past discordgo's retries", discordtest.BadGateway, 4, patchOriginal(h), 1},
		{"the edit's answer lost", discordtest.LoseAnswer, 1, patchOriginal(h), 2},
		{"the acknowledgement's connection dropped", discordtest.Drop, 1, postCallback, 1},
		{"the acknowledgement's answer lost", discordtest.LoseAnswer, 1, postCallback, 1},
		{"the acknowledgement answered 503", discordtest.Unavailable, 1, postCallback, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			i := h.fake.Command(guildID, channelID, theDM, "memory", discordtest.Sub("search",
				discordtest.Str("query", "Grimjaw"), discordtest.Str("mode", "text")))
			faultedBefore := len(h.fake.Faulted())
			h.fake.FailNext(tc.times, tc.fault, tc.call(i))
			h.send(i)
			if n := len(h.fake.Faulted()) - faultedBefore; n != tc.times {
				t.Fatalf("the fault failed %d calls, want %d: the case tests nothing", n, tc.times)
			}
			edits := h.callsTo("PATCH", i.OriginalPath(h.fake.AppID))
			if len(edits) != tc.originals {
				t.Fatalf("Discord took %d edits of the original, want %d", len(edits), tc.originals)
			}
			for _, e := range edits {
				if string(e.Body) != string(edits[0].Body) {
					t.Errorf("the edits differ:\n%s\n%s", edits[0].Body, e.Body)
				}
			}
			var m struct{ Content string }
			if err := edits[0].Decode(&m); err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(m.Content, "Said at the table") || !strings.Contains(m.Content, "Grimjaw") {
				t.Errorf("the DM's answer: %q", m.Content)
			}
			if n := len(h.callsTo("POST", i.FollowupPath(h.fake.AppID))); n != 0 {
				t.Errorf("%d follow-ups; the answer fits one message", n)
			}
			if lv := levelsAbout(logs, i.ID); lv[slog.LevelError] != 0 || lv[slog.LevelWarn] == 0 {
				t.Errorf("log levels about the interaction %v; want Warns of the failed attempts and no Error", lv)
			}
		})
	}
}

// patchOriginal matches the edit of i's original response.
func patchOriginal(h *harness) func(discordtest.Interaction) func(discordtest.Call) bool {
	return func(i discordtest.Interaction) func(discordtest.Call) bool {
		return discordtest.PathIs("PATCH", i.OriginalPath(h.fake.AppID))
	}
}

// postCallback matches i's initial response.
func postCallback(i discordtest.Interaction) func(discordtest.Call) bool {
	return discordtest.PathIs("POST", i.CallbackPath())
}

// TestAcknowledgementWhoseAnswerWasLostActsOnce (HANG): the acknowledgement
// of a DM's /memory fact add reached Discord but its answer was lost; the
// bot sends it again, Discord refuses the copy as already acknowledged,
// and the bot acts: the fact is written once and the DM answered.
func TestAcknowledgementWhoseAnswerWasLostActsOnce(t *testing.T) {
	t.Parallel()
	h := newHarness(t, bot.Deps{})
	ctx := context.Background()
	add := h.fake.Command(guildID, channelID, theDM, "memory", discordtest.Group("fact", discordtest.Sub("add",
		discordtest.Str("subject", "grimjaw"), discordtest.Str("relation", "fears"), discordtest.Str("object", "duskwood"))))
	h.fake.FailNext(1, discordtest.LoseAnswer, postCallback(add))
	r := h.send(add)
	if len(h.fake.Faulted()) != 1 {
		t.Fatalf("the fault failed %d calls, want 1", len(h.fake.Faulted()))
	}
	if n := len(h.callsTo("POST", add.CallbackPath())); n != 2 {
		t.Errorf("%d initial responses reached Discord, want the lost one and its copy", n)
	}
	if !strings.Contains(r.Data.Content, "Added as canon") {
		t.Errorf("the DM's answer: %q", r.Data.Content)
	}
	if n := len(h.callsTo("PATCH", add.OriginalPath(h.fake.AppID))); n != 1 {
		t.Errorf("%d edits of the original, want 1", n)
	}
	rels, err := h.camp.Graph().Relationships(ctx, "grimjaw", memory.TraversalOpts{RelTypes: []string{"FEARS"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(rels) != 1 {
		t.Errorf("Grimjaw fears %+v, want one fact", rels)
	}
}

// TestFollowUpIsSentAgainOnlyWhenNotPosted (HANG): a long answer's second
// part is a follow-up message, a new message each time it is sent. A 503
// (Discord did not post it) is sent again; a lost answer (Discord may
// have posted it) is not, so no part shows twice, and the failure is
// logged at Error.
func TestFollowUpIsSentAgainOnlyWhenNotPosted(t *testing.T) {
	t.Parallel()
	store, _ := pgtest.NewStore(t, 16)
	logs := &logRecords{}
	h := newHarnessLogged(t, bot.Deps{}, bot.Guild{ID: guildID, Campaign: campaign, DMRoleIDs: []string{dmRole}}, store, slog.New(logs))
	var es []memory.TranscriptEntry
	for k := range 40 {
		es = append(es, memory.TranscriptEntry{SessionID: "s9", SpeakerID: "u2", SpeakerName: "Lyra",
			Text: strings.Repeat("The dragon Eldrinax sleeps beneath the drowned vault and dreams of names. ", 5),
			At:   time.Date(2026, 4, 1, 19, k, 0, 0, time.UTC)})
	}
	if _, err := h.camp.Sessions().WriteEntries(context.Background(), es); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name      string
		fault     discordtest.Fault
		followUps int // that Discord took
		errors    int // logged about the interaction
	}{
		{"503", discordtest.Unavailable, 1, 0},
		{"answer lost", discordtest.LoseAnswer, 1, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			i := h.fake.Command(guildID, channelID, theDM, "memory", discordtest.Sub("search",
				discordtest.Str("query", "dragon"), discordtest.Str("mode", "text")))
			faultedBefore := len(h.fake.Faulted())
			h.fake.FailNext(1, tc.fault, discordtest.PathIs("POST", i.FollowupPath(h.fake.AppID)))
			h.send(i)
			if n := len(h.fake.Faulted()) - faultedBefore; n != 1 {
				t.Fatalf("the fault failed %d calls, want 1", n)
			}
			if n := len(h.callsTo("POST", i.FollowupPath(h.fake.AppID))); n != tc.followUps {
				t.Errorf("Discord took %d follow-ups, want %d", n, tc.followUps)
			}
			if n := len(h.callsTo("PATCH", i.OriginalPath(h.fake.AppID))); n != 1 {
				t.Errorf("%d edits of the original, want 1", n)
			}
			if n := levelsAbout(logs, i.ID)[slog.LevelError]; n != tc.errors {
				t.Errorf("%d Errors logged about the interaction, want %d", n, tc.errors)
			}
		})
	}
}

// TestAnswerThatFinallyFailsIsLoggedAtError (HANG): when Discord fails
// every attempt at the edit, the bot stops (a bounded number of
// attempts) and says so at Error, naming the command and the interaction.
func TestAnswerThatFinallyFailsIsLoggedAtError(t *testing.T) {
	t.Parallel()
	store, _ := pgtest.NewStore(t, 16)
	logs := &logRecords{}
	h := newHarnessLogged(t, bot.Deps{}, bot.Guild{ID: guildID, Campaign: campaign, DMRoleIDs: []string{dmRole}}, store, slog.New(logs))
	i := h.fake.Command(guildID, channelID, theDM, "memory", discordtest.Sub("search",
		discordtest.Str("query", "Grimjaw"), discordtest.Str("mode", "text")))
	// More failures than the bot makes attempts: what is left of them
	// counts the attempts.
	const failures = 100
	h.fake.FailNext(failures, discordtest.Unavailable, discordtest.PathIs("PATCH", i.OriginalPath(h.fake.AppID)))
	h.send(i)
	attempts := len(h.fake.Faulted())
	if attempts < 2 || attempts >= failures {
		t.Errorf("the bot made %d attempts at the edit; want a few, and a bound", attempts)
	}
	if n := len(h.callsTo("PATCH", i.OriginalPath(h.fake.AppID))); n != 0 {
		t.Fatalf("%d edits reached Discord through a fault on every one", n)
	}
	var errs []slog.Record
	for _, r := range logs.about(i.ID) {
		if r.Level == slog.LevelError {
			errs = append(errs, r)
		}
	}
	if len(errs) != 1 {
		t.Fatalf("%d Errors about the interaction, want 1", len(errs))
	}
	var command string
	errs[0].Attrs(func(a slog.Attr) bool {
		if a.Key == "command" {
			command = a.Value.String()
		}
		return true
	})
	if command != "/memory search" {
		t.Errorf("the Error names the command %q", command)
	}
}

// searcher is a fake embedding search (a remote provider): it panics
// when panics is set, and fails with err otherwise.
type searcher struct {
	panics bool
	err    error
}

func (s searcher) SearchMeaning(context.Context, *access.Campaign, string, int) ([]bot.SearchHit, error) {
	if s.panics {
		panic("the provider's client broke")
	}
	return nil, s.err
}

// TestAcknowledgedCommandIsAlwaysAnswered (HANG): a deferred reply whose
// handler ends without answering (here it panics) would show "thinking…"
// until Discord gives up 15 minutes later; the DM gets a plain message
// instead, once, and the silence is logged at Error. Work stopped for
// running out of time is answered in plain words, not with "context
// deadline exceeded".
func TestAcknowledgedCommandIsAlwaysAnswered(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		searcher searcher
		want     string
		errors   int // logged about the interaction
	}{
		{"the handler panics", searcher{panics: true}, "Something went wrong", 2}, // the silence and the panic
		{"the work ran out of time", searcher{err: fmt.Errorf("embedding the query: %w", context.DeadlineExceeded)}, "took too long", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			store, _ := pgtest.NewStore(t, 16)
			logs := &logRecords{}
			h := newHarnessLogged(t, bot.Deps{Searcher: tc.searcher}, bot.Guild{ID: guildID, Campaign: campaign, DMRoleIDs: []string{dmRole}},
				store, slog.New(logs))
			i := h.fake.Command(guildID, channelID, theDM, "memory", discordtest.Sub("search",
				discordtest.Str("query", "Grimjaw"), discordtest.Str("mode", "semantic")))
			r := h.send(i)
			if n := len(h.callsTo("PATCH", i.OriginalPath(h.fake.AppID))); n != 1 {
				t.Errorf("%d edits of the original, want 1", n)
			}
			if !strings.Contains(r.Data.Content, tc.want) || strings.Contains(r.Data.Content, "deadline") {
				t.Errorf("the DM read %q, want %q", r.Data.Content, tc.want)
			}
			if n := levelsAbout(logs, i.ID)[slog.LevelError]; n != tc.errors {
				t.Errorf("%d Errors about the interaction, want %d", n, tc.errors)
			}
		})
	}
}

// stuckSearcher is an embedding search stuck on something that does not
// heed its context: it says when it is entered, and returns once release
// is closed.
type stuckSearcher struct{ entered, release chan struct{} }

func (s stuckSearcher) SearchMeaning(context.Context, *access.Campaign, string, int) ([]bot.SearchHit, error) {
	close(s.entered)
	<-s.release
	return nil, nil
}

// TestStuckHandlerStillAnswers (HANG): a handler stuck past its bound on
// something that ignores its context still leaves the DM an answer (that
// it took too long), logged at Error; when it comes unstuck, its own
// answer edits the response. The watch runs on a fake clock the test
// moves.
func TestStuckHandlerStillAnswers(t *testing.T) {
	t.Parallel()
	store, _ := pgtest.NewStore(t, 16)
	logs := &logRecords{}
	stuck := stuckSearcher{entered: make(chan struct{}), release: make(chan struct{})}
	clk := clocktest.NewFake(time.Date(2026, 4, 1, 19, 0, 0, 0, time.UTC))
	h := newHarnessLogged(t, bot.Deps{Searcher: stuck}, bot.Guild{ID: guildID, Campaign: campaign, DMRoleIDs: []string{dmRole}},
		store, slog.New(logs), bot.WithClock(clk))
	var release sync.Once
	t.Cleanup(func() { release.Do(func() { close(stuck.release) }) })
	i := h.fake.Command(guildID, channelID, theDM, "memory", discordtest.Sub("search",
		discordtest.Str("query", "Grimjaw"), discordtest.Str("mode", "semantic")))
	if err := h.fake.Send(i); err != nil {
		t.Fatal(err)
	}
	select {
	case <-stuck.entered:
	case <-time.After(wait):
		h.hung("the handler never reached the search")
	}
	clk.Advance(bot.WatchAfter)
	if first, _ := h.original(i)["content"].(string); !strings.Contains(first, "took too long") {
		t.Errorf("the DM read %q while the handler was stuck", first)
	}
	if n := levelsAbout(logs, i.ID)[slog.LevelError]; n != 1 {
		t.Errorf("%d Errors about the interaction, want 1", n)
	}
	release.Do(func() { close(stuck.release) })
	h.waitHandled(i)
	edits := h.callsTo("PATCH", i.OriginalPath(h.fake.AppID))
	if len(edits) != 2 {
		t.Fatalf("%d edits of the original, want the watch's and the handler's", len(edits))
	}
	var m struct{ Content string }
	if err := edits[1].Decode(&m); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(m.Content, "**Related memories** (0)") {
		t.Errorf("the handler's own answer: %q", m.Content)
	}
}
