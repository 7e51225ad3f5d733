package postsession_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/glyphoxa/glyphoxa/internal/llm/llmtest"
	"github.com/glyphoxa/glyphoxa/lifecycle/postsession"
	"github.com/glyphoxa/glyphoxa/memory"
	"github.com/glyphoxa/glyphoxa/memory/postgres"
	"github.com/glyphoxa/glyphoxa/memory/postgres/pgtest"
)

var errKilled = errors.New("killed")

// killSwitch stops a run before its n-th write, as a crash between two
// writes would: every write the processor makes (an entity, a fact, a
// progress mark, a cached answer) is one transaction, so these are all the
// points a kill can fall between.
type killSwitch struct {
	at, n int // at 0: never
}

func (k *killSwitch) write() error {
	k.n++
	if k.at > 0 && k.n >= k.at {
		return errKilled
	}
	return nil
}

type killGraph struct {
	*postgres.Graph
	k *killSwitch
}

func (g killGraph) UpsertEntity(ctx context.Context, e memory.Entity) error {
	if err := g.k.write(); err != nil {
		return err
	}
	return g.Graph.UpsertEntity(ctx, e)
}

func (g killGraph) RecordFact(ctx context.Context, r memory.Relationship) (memory.Relationship, []memory.Conflict, error) {
	if err := g.k.write(); err != nil {
		return memory.Relationship{}, nil, err
	}
	return g.Graph.RecordFact(ctx, r)
}

func (g killGraph) RecordFactOn(ctx context.Context, r memory.Relationship, evidence []int64) (memory.Relationship, []memory.Conflict, error) {
	if err := g.k.write(); err != nil {
		return memory.Relationship{}, nil, err
	}
	return g.Graph.RecordFactOn(ctx, r, evidence)
}

type killProgress struct {
	*postsession.StoredProgress
	k *killSwitch
}

func (p killProgress) Save(ctx context.Context, sessionID, stage string, pos int, done bool) error {
	if err := p.k.write(); err != nil {
		return err
	}
	return p.StoredProgress.Save(ctx, sessionID, stage, pos, done)
}

func (p killProgress) SaveExtraction(ctx context.Context, sessionID string, window int, hash string, x postsession.Extraction) error {
	if err := p.k.write(); err != nil {
		return err
	}
	return p.StoredProgress.SaveExtraction(ctx, sessionID, window, hash, x)
}

func killable(t *testing.T, store *postgres.Store, camp *postgres.Campaign, srv *llmtest.Server, k *killSwitch) *postsession.Processor {
	t.Helper()
	p, err := postsession.New(postsession.Config{Transcript: camp.Sessions(), Graph: killGraph{camp.Graph(), k}, Extractor: extractor(srv),
		Progress: killProgress{postsession.NewStoredProgress(camp.Processing()), k}, Window: 4, Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestKilledAtEveryPoint stops extraction before each of its writes in
// turn and restarts it the way serve does at start-up (ResumePending): every
// restart ends with the same entities and facts as an uninterrupted run.
func TestKilledAtEveryPoint(t *testing.T) {
	store, _ := pgtest.NewStore(t, 8)
	srv := llmtest.New(handler)
	defer srv.Close()
	ctx := context.Background()

	base := pgtest.Campaign(t, store, "uninterrupted")
	seed(t, base)
	count := &killSwitch{}
	if _, err := killable(t, store, base, srv, count).Run(ctx, session); err != nil {
		t.Fatal(err)
	}
	want := state(t, store, "uninterrupted")
	checkState(t, want)
	if count.n < 10 {
		t.Fatalf("only %d writes in a run", count.n)
	}
	for at := 1; at <= count.n; at++ {
		name := fmt.Sprintf("killed-%d", at)
		camp := pgtest.Campaign(t, store, name)
		seed(t, camp)
		if _, err := killable(t, store, camp, srv, &killSwitch{at: at}).Run(ctx, session); !errors.Is(err, errKilled) {
			t.Fatalf("kill before write %d: run ended with %v", at, err)
		}
		restart := killable(t, store, camp, srv, &killSwitch{})
		if at == 1 {
			// Killed before its first write, processing never began: serve
			// does not resume it, process --extract runs it.
			if reps, err := restart.RunInterrupted(ctx); err != nil || len(reps) != 0 {
				t.Fatalf("a run killed before it began was resumed: %+v, %v", reps, err)
			}
			if _, err := restart.RunUnfinished(ctx); err != nil {
				t.Fatal(err)
			}
		} else if err := postsession.ResumePending(ctx, quiet(), map[string]*postsession.Processor{name: restart}); err != nil {
			t.Fatalf("resume after a kill before write %d: %v", at, err)
		}
		if got := state(t, store, name); !reflect.DeepEqual(got, want) {
			t.Errorf("killed before write %d of %d and resumed:\n%v\nwant (uninterrupted)\n%v", at, count.n, got, want)
		}
	}
	t.Logf("killed before each of the %d writes of a run and resumed: the same %d entities and %d facts every time",
		count.n, len(want.entities), len(want.facts))
}

// TestReExtractionReusesAnswers re-runs a finished extraction (process
// --extract --session) with a model that would now answer otherwise: the
// cached answers are used, nothing is asked, nothing is duplicated.
func TestReExtractionReusesAnswers(t *testing.T) {
	store, _ := pgtest.NewStore(t, 8)
	camp := pgtest.Campaign(t, store, "rerun")
	seed(t, camp)
	srv := llmtest.New(handler)
	defer srv.Close()
	ctx := context.Background()
	var steps []postsession.Step
	p, err := postsession.New(postsession.Config{Transcript: camp.Sessions(), Graph: camp.Graph(), Extractor: extractor(srv),
		Progress: postsession.NewStoredProgress(camp.Processing()), Window: 4, Logger: quiet(),
		OnStep: func(s postsession.Step) { steps = append(steps, s) }})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Run(ctx, session); err != nil {
		t.Fatal(err)
	}
	first := state(t, store, "rerun")
	asked := len(srv.Requests())
	// The model changes its mind: different names, new facts.
	srv.SetHandler(func(int, llmtest.Request) llmtest.Reply {
		return llmtest.Reply{Text: `{"entities":[{"name":"Grim Jaw the Smith","type":"npc"}],"relationships":[]}`}
	})
	if err := postsession.NewStoredProgress(camp.Processing()).ResetExtraction(ctx, session); err != nil {
		t.Fatal(err)
	}
	rep, err := p.Run(ctx, session)
	if err != nil || rep.Windows != 3 || rep.Cached != 3 {
		t.Fatalf("re-run %+v, %v; want 3 windows from the cache", rep, err)
	}
	if got := state(t, store, "rerun"); !reflect.DeepEqual(got, first) || len(srv.Requests()) != asked {
		t.Fatalf("re-run changed the graph or asked the model (%d requests, %d before):\n%v\nwant\n%v", len(srv.Requests()), asked, got, first)
	}
	want := []postsession.Step{{session, 1, 3, false}, {session, 2, 3, false}, {session, 3, 3, false},
		{session, 1, 3, true}, {session, 2, 3, true}, {session, 3, 3, true}}
	if !reflect.DeepEqual(steps, want) {
		t.Errorf("steps %+v", steps)
	}
	// A session never processed is not "interrupted": serve leaves it to
	// process --extract.
	if err := camp.Sessions().StartSession(ctx, "imported", t0.Add(24*time.Hour)); err != nil {
		t.Fatal(err)
	}
	if err := camp.Sessions().EndSession(ctx, "imported", t0.Add(25*time.Hour)); err != nil {
		t.Fatal(err)
	}
	reps, err := p.RunInterrupted(ctx)
	if err != nil || len(reps) != 0 {
		t.Fatalf("RunInterrupted ran %+v, %v", reps, err)
	}
	unfinished, err := postsession.NewStoredProgress(camp.Processing()).Unfinished(ctx)
	if err != nil || !reflect.DeepEqual(unfinished, []string{"imported"}) {
		t.Fatalf("unfinished %v, want the imported session", unfinished)
	}
}
