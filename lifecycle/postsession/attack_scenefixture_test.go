package postsession_test

import (
	"context"
	"testing"
	"time"

	"github.com/glyphoxa/glyphoxa/lifecycle/postsession"
	"github.com/glyphoxa/glyphoxa/memory"
	"github.com/glyphoxa/glyphoxa/memory/postgres"
	"github.com/glyphoxa/glyphoxa/memory/postgres/pgtest"
)

// sceneAttack is the table of the attacks on the entity secrecy of split
// scenes: a campaign where Thorin alone hears a name in a split scene
// (session s1), then the party, together, says something about it
// (session s2), each session processed by a scripted extraction.
type sceneAttack struct {
	t    *testing.T
	ctx  context.Context
	camp *postgres.Campaign
	t0   time.Time
}

func newSceneAttack(t *testing.T, campaign string) *sceneAttack {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute) // a hang guard
	t.Cleanup(cancel)
	store, _ := pgtest.NewStore(t, 8)
	return &sceneAttack{t: t, ctx: ctx, camp: pgtest.Campaign(t, store, campaign), t0: time.Date(2026, 3, 1, 19, 0, 0, 0, time.UTC)}
}

func (a *sceneAttack) write(sess, who, text string, at time.Time) {
	a.t.Helper()
	if _, err := a.camp.Sessions().WriteEntry(a.ctx, memory.TranscriptEntry{SessionID: sess, SpeakerID: who, SpeakerName: who, Text: text, At: at}); err != nil {
		a.t.Fatal(err)
	}
}

// run processes session sess with x as every window's extraction.
func (a *sceneAttack) run(sess string, x postsession.Extraction) {
	a.t.Helper()
	p, err := postsession.New(postsession.Config{Transcript: a.camp.Sessions(), Graph: a.camp.Graph(),
		Extractor: scriptedExtractor{x}, Progress: postsession.NewStoredProgress(a.camp.Processing()), Logger: quiet()})
	if err != nil {
		a.t.Fatal(err)
	}
	if _, err := p.Run(a.ctx, sess); err != nil {
		a.t.Fatal(err)
	}
}

// sees lists the entities named like name that the player bound to
// player may see.
func (a *sceneAttack) sees(player, name string) []memory.Entity {
	a.t.Helper()
	c, err := a.camp.As(memory.PlayerViewerOf(player))
	if err != nil {
		a.t.Fatal(err)
	}
	es, err := c.Graph().FindEntities(a.ctx, memory.EntityFilter{Name: name})
	if err != nil {
		a.t.Fatal(err)
	}
	return es
}

// scene records and processes session s1: other and Thorin together, from
// minute 1 to 5 Thorin alone in a split scene, where speaker says line at
// minute 2; x is its extraction.
func (a *sceneAttack) scene(other, speaker, line string, x postsession.Extraction) {
	a.t.Helper()
	sl := a.camp.Sessions()
	if err := sl.StartSession(a.ctx, "s1", a.t0); err != nil {
		a.t.Fatal(err)
	}
	for _, p := range []struct {
		at      time.Duration
		players []string
		split   bool
	}{{0, []string{other, "thorin"}, false}, {time.Minute, []string{"thorin"}, true}, {5 * time.Minute, []string{other, "thorin"}, false}} {
		if err := sl.RecordPresence(a.ctx, "s1", a.t0.Add(p.at), p.players, p.split); err != nil {
			a.t.Fatal(err)
		}
	}
	a.write("s1", speaker, line, a.t0.Add(2*time.Minute))
	if err := sl.EndSession(a.ctx, "s1", a.t0.Add(time.Hour)); err != nil {
		a.t.Fatal(err)
	}
	a.run("s1", x)
}

// said is a line of the party session: who says text.
type said struct{ who, text string }

// party records and processes session s2, a week after s1: other and
// Thorin together, lines said a minute apart from its first minute; x is
// its extraction.
func (a *sceneAttack) party(other string, lines []said, x postsession.Extraction) {
	a.t.Helper()
	sl := a.camp.Sessions()
	s2 := a.t0.Add(7 * 24 * time.Hour)
	if err := sl.StartSession(a.ctx, "s2", s2); err != nil {
		a.t.Fatal(err)
	}
	if err := sl.RecordPresence(a.ctx, "s2", s2, []string{other, "thorin"}, false); err != nil {
		a.t.Fatal(err)
	}
	for i, l := range lines {
		a.write("s2", l.who, l.text, s2.Add(time.Duration(i+1)*time.Minute))
	}
	if err := sl.EndSession(a.ctx, "s2", s2.Add(time.Hour)); err != nil {
		a.t.Fatal(err)
	}
	a.run("s2", x)
}
