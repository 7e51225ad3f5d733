package scene_test

import (
	"context"
	"flag"
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/glyphoxa/glyphoxa/internal/leakcheck"
	"github.com/glyphoxa/glyphoxa/internal/llm"
	"github.com/glyphoxa/glyphoxa/internal/llm/llmtest"
	"github.com/glyphoxa/glyphoxa/lifecycle/contextmgr"
	"github.com/glyphoxa/glyphoxa/memory"
	"github.com/glyphoxa/glyphoxa/memory/embed"
	"github.com/glyphoxa/glyphoxa/memory/postgres/pgtest"
	"github.com/glyphoxa/glyphoxa/table"
	"github.com/glyphoxa/glyphoxa/table/scene"
	"github.com/glyphoxa/glyphoxa/voice/audio"
	"github.com/glyphoxa/glyphoxa/voice/tts"
)

// soakLength is the table talk TestSoak plays per session: the default
// keeps it within a minute under -race; `make soak` plays a real table's
// five hours (-soak=5h).
var soakLength = flag.Duration("soak", 15*time.Minute, "virtual length of each of TestSoak's two sessions")

// soakPlayers are the five players of the soak table.
var soakPlayers = []string{"Thorin", "Lyra", "Kael", "Mira", "Bram"}

// soakScenes are the DM's scenes, in turn, one every soakSceneEvery.
var soakScenes = [][]string{{"brannoc", "grimjaw"}, {"elara"}, {"vexa", "brannoc"}, {"grimjaw", "elara", "vexa"}}

var soakNames = map[string]string{"brannoc": "Brannoc", "grimjaw": "Grimjaw", "elara": "Elara", "vexa": "Vexa"}

const soakSceneEvery = 20 * time.Minute

// soakEarly is said at the start of the first session: the summary of the
// whole session must still hold it at the end.
const soakEarly = "listen, the vault key is hidden under the third stone of the old mill."

var soakChatter = []string{
	"did anyone bring the rope from the last dungeon number %d?",
	"i roll for perception, that is a %d.",
	"my boots are soaked through, i need pair %d.",
	"who is keeping track of the rations, we have %d left.",
	"i still think we should have taken road %d.",
	"the map shows %d paths out of the valley.",
}

var soakAsks = []string{
	"%s, what news of the caravans, question %d?",
	"%s, how much for a room, we are %d?",
	"%s, have you seen the stranger with %d rings?",
	"%s, tell us about the ruins, i count %d towers.",
}

// soakScene is length of busy table talk: five players, a line every 6
// to 10 s, every third one asked of an NPC in the DM's scene, which
// changes every soakSceneEvery. start sets its virtual date.
func soakScene(session string, start time.Time, length time.Duration, early bool) (*scene.File, []time.Duration) {
	f := &scene.File{Session: session, Start: start}
	for i, n := range soakPlayers {
		f.Players = append(f.Players, scene.Player{Name: n, ID: fmt.Sprintf("5%017d", i+1)})
	}
	var at []time.Duration // virtual offset of each line (lines only)
	var t time.Duration
	sc := -1
	for i := 0; t < length; i++ {
		if k := int(t / soakSceneEvery); k != sc {
			sc = k
			f.Lines = append(f.Lines, scene.Step{Command: "/npc scene " + strings.Join(soakScenes[k%len(soakScenes)], " "), By: "DM"})
		}
		gap := time.Duration(6+i%5) * time.Second
		t += gap
		who := soakPlayers[i%len(soakPlayers)]
		var text string
		switch {
		case early && i == 3:
			text = soakEarly
		case i%3 == 0:
			present := soakScenes[sc%len(soakScenes)]
			text = fmt.Sprintf(soakAsks[(i/3)%len(soakAsks)], soakNames[present[(i/3)%len(present)]], i)
		default:
			text = fmt.Sprintf(soakChatter[i%len(soakChatter)], i)
		}
		h := text
		f.Lines = append(f.Lines, scene.Step{Speaker: who, Say: text, Heard: &h, After: scene.Duration(gap)})
		at = append(at, t)
	}
	return f, at
}

// soakLLM is the soak's model: NPC turns get a short line, summaries keep
// the first soakSummaryChars of what they are given (a model's summary is
// bounded, and the oldest events come first in what the table sends), and
// fact extraction finds nothing. It records every request's size.
type soakLLM struct {
	lines atomic.Int64 // lines played so far, set by the test

	mu   sync.Mutex
	reqs []soakReq
}

type soakReq struct {
	kind  string // npc, summary or extract
	line  int64  // lines played when it was made
	bytes int    // of its messages' contents
}

const soakSummaryChars = 600

func (m *soakLLM) reply(_ int, req llmtest.Request) llmtest.Reply {
	n := 0
	var b strings.Builder
	for _, x := range req.Messages {
		n += len(x.Content)
	}
	r := soakReq{line: m.lines.Load(), bytes: n}
	var out llmtest.Reply
	switch {
	case npcName.MatchString(req.Messages[0].Content):
		r.kind = "npc"
		out.Text = npcName.FindStringSubmatch(req.Messages[0].Content)[1] + " here. Aye, I hear you."
	case llmtest.AsksJSON(req):
		r.kind = "extract"
		out.Text = `{"entities":[],"relationships":[]}`
	default:
		r.kind = "summary"
		for _, x := range req.Messages[1:] {
			b.WriteString(x.Content)
			b.WriteString(" ")
		}
		// What the table sent, less the summariser's own framing, which
		// would otherwise pile up at the front with every fold.
		s := strings.NewReplacer("Transcript:\n", "", "(earlier summary) ", "", "Summary: ", "").Replace(b.String())
		out.Text = "Summary: " + s[:min(len(s), soakSummaryChars)]
	}
	m.mu.Lock()
	m.reqs = append(m.reqs, r)
	m.mu.Unlock()
	return out
}

// soakPoint is what the soak measured after a line.
type soakPoint struct {
	at         time.Duration
	heap       uint64
	goroutines int
}

// TestSoak plays two sessions of a five-player table a week apart (each
// -soak long, 40 minutes by default; `make soak` plays five hours) through
// the production table, with the fake model's requests recorded, and
// checks that nothing grows with the session's length: an NPC's prompt
// plateaus, the running summary stays bounded and keeps the first
// session's early events, and no goroutine outlives the sessions. It logs
// the numbers: the heap includes what the fake model and the scene player
// keep (every request, every line's report with its prompt); SOAK_HEAP=file
// writes heap profiles (file.1 at the first session's last line, file.2 at
// the second's first) to tell them apart.
func TestSoak(t *testing.T) {
	if testing.Short() {
		t.Skip("soak: not in -short")
	}
	leakcheck.Check(t)
	if os.Getenv("SOAK_HEAP") != "" {
		runtime.MemProfileRate = 512 // every allocation of note, for the profile
	}
	store, _ := pgtest.NewStore(t, dims)
	pgtest.Import(t, store, sampleCampaign)
	ctx := context.Background()
	camp, err := store.Campaign(ctx, "ironhold-saga")
	if err != nil {
		t.Fatal(err)
	}
	emb, err := embed.NewOffline(dims)
	if err != nil {
		t.Fatal(err)
	}
	m := &soakLLM{}
	srv := llmtest.New(m.reply)
	t.Cleanup(srv.Close)
	client, err := llm.New(llm.Config{BaseURL: srv.URL(), Model: "fake", Backoff: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	conns := func() int {
		var n int
		if err := store.Pool().QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	runtime.GC()
	g0, c0 := runtime.NumGoroutine(), conns()

	start := time.Date(2026, 5, 2, 18, 0, 0, 0, time.UTC)
	var summaries []string
	for week, session := range []string{"soak-1", "soak-2"} {
		sc, at := soakScene(session, start.Add(time.Duration(week)*7*24*time.Hour), *soakLength, week == 0)
		var points []soakPoint
		played := 0
		var mu sync.Mutex
		opts := scene.Options{Campaign: pgtest.Open(t, store, camp.ID(), memory.DMViewer()),
			Providers: table.Providers{LLM: client, Embedder: emb, Summarizer: contextmgr.NewOpenAISummarizer(client, "fake")},
			Settings: table.Settings{StateDir: t.TempDir(), MaxContextTokens: 1200,
				Audio: audio.Config{Endpoint: 600 * time.Millisecond, MaxUtterance: 30 * time.Second}},
			PlayerVoice: tts.Espeak{}, NPCVoice: chime{}, Logger: quiet(), LineTimeout: 3 * time.Minute,
			OnEvent: func(ev scene.Event) {
				if ev.Line == nil || ev.Line.Late {
					return
				}
				mu.Lock()
				defer mu.Unlock()
				played++
				m.lines.Store(int64(played))
				if prof := os.Getenv("SOAK_HEAP"); prof != "" && (week == 0 && played == len(at) || week == 1 && played == 1) {
					// The heap while the first session is still open, and
					// once the second has begun (what the first left), for
					// go tool pprof -sample_index=inuse_space.
					runtime.GC()
					if f, err := os.Create(fmt.Sprintf("%s.%d", prof, week+1)); err == nil {
						pprof.WriteHeapProfile(f)
						f.Close()
					}
				}
				if played%100 == 0 || played == len(at) {
					var ms runtime.MemStats
					runtime.GC()
					runtime.ReadMemStats(&ms)
					points = append(points, soakPoint{at: at[min(played, len(at))-1], heap: ms.HeapAlloc, goroutines: runtime.NumGoroutine()})
				}
			}}
		res, err := scene.Play(ctx, sc, opts)
		if err != nil {
			t.Fatal(err)
		}
		sess, err := camp.Sessions().Session(ctx, session)
		if err != nil {
			t.Fatal(err)
		}
		summaries = append(summaries, sess.Summary)
		// The NPC prompts by the line they answered, in quarters of the
		// session.
		m.mu.Lock()
		reqs := append([]soakReq(nil), m.reqs...)
		m.reqs = nil
		m.mu.Unlock()
		quarter := [4]int{}
		counts := map[string]int{}
		biggest := map[string]int{}
		for _, r := range reqs {
			counts[r.kind]++
			biggest[r.kind] = max(biggest[r.kind], r.bytes)
			if r.kind == "npc" && r.line > 0 {
				q := min(3, int(4*(r.line-1)/int64(len(at))))
				quarter[q] = max(quarter[q], r.bytes)
			}
		}
		t.Logf("%s: %d lines over %s, %d line events; requests %v, largest %v", session, len(at), at[len(at)-1], len(res.Lines), counts, biggest)
		t.Logf("%s: largest NPC prompt by quarter of the session: %v bytes", session, quarter)
		for _, p := range points {
			t.Logf("%s: at %s heap %d KiB, %d goroutines", session, p.at.Round(time.Minute), p.heap>>10, p.goroutines)
		}
		t.Logf("%s: running summary %d bytes", session, len(sess.Summary))
		// The prompt plateaus: the last quarter's largest is no more than
		// a fifth over the second's (the first warms up: the digest and
		// the summary start empty).
		if quarter[3] > quarter[1]*6/5 {
			t.Errorf("%s: the NPC prompt grows with the session: largest %v bytes by quarter", session, quarter)
		}
	}
	if !strings.Contains(strings.ToLower(summaries[0]), "vault key") {
		t.Errorf("the first session's running summary lost its early event (the vault key):\n%s", summaries[0])
	}
	for i, s := range summaries {
		if len(s) > 8*soakSummaryChars {
			t.Errorf("session %d's running summary is %d bytes: it grows with the session", i+1, len(s))
		}
	}
	runtime.GC()
	if os.Getenv("SOAK_DEBUG") != "" {
		var b strings.Builder
		pprof.Lookup("goroutine").WriteTo(&b, 1)
		t.Log(b.String())
	}
	g1, c1 := runtime.NumGoroutine(), conns()
	t.Logf("goroutines %d before, %d after; database connections %d before, %d after", g0, g1, c0, c1)
}
