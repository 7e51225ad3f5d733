package tts

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/glyphoxa/glyphoxa/voice/audio"
	"github.com/glyphoxa/glyphoxa/voice/audio/audiotest"
	"github.com/glyphoxa/glyphoxa/voice/provider"
)

// festivalPid is the pid of the festival f keeps running (0: none).
func festivalPid(f *Festival) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.proc == nil {
		return 0
	}
	return f.proc.cmd.Process.Pid
}

// TestFestivalKeepsRunning: one festival speaks sentence after sentence,
// in any voice, and text made to end its Scheme string does not end it;
// what it cannot say fails that sentence alone.
func TestFestivalKeepsRunning(t *testing.T) {
	t.Parallel()
	audiotest.Need(t, "festival")
	f := &Festival{}
	t.Cleanup(func() { f.Close() })
	ctx := context.Background()
	pid := 0
	for i, s := range []struct {
		text  string
		voice string
	}{
		{"Welcome to Ironhold, traveller.", FestivalKAL},
		{"The forge is cold tonight.", FestivalSLT},
		{`") (quit) ("`, FestivalKAL},
		{`\") (quit) (\" and a line` + "\n" + `break`, FestivalKED},
		{"Back to the first voice.", FestivalKAL},
	} {
		p, err := f.Synthesize(ctx, s.text, Voice{Name: s.voice})
		if err != nil {
			t.Fatalf("sentence %d (%q, %s): %v", i, s.text, s.voice, err)
		}
		if p.RMS() < -35 {
			t.Errorf("sentence %d: %.1f dBFS, not audible", i, p.RMS())
		}
		got := festivalPid(f)
		if pid == 0 {
			pid = got
		}
		if got == 0 || got != pid {
			t.Fatalf("sentence %d spoken by festival %d, the first by %d: want one festival", i, got, pid)
		}
	}
	for _, text := range []string{"...", "Ω", "é.", "— —"} {
		_, err := f.Synthesize(ctx, text, Voice{Name: FestivalKAL})
		var pe *provider.Error
		if err == nil || !errors.As(err, &pe) || errors.Is(err, ErrNoText) {
			t.Errorf("%q: %v, want a provider.Error (Local speaks it with espeak-ng)", text, err)
		}
	}
	if got := festivalPid(f); got != pid {
		t.Errorf("after the unsayable lines festival is %d, want %d still", got, pid)
	}
	if _, err := f.Synthesize(ctx, "nobody", Voice{Name: "nobody_here"}); !errors.Is(err, ErrBadVoice) {
		t.Errorf("an unknown voice: %v, want ErrBadVoice", err)
	}
	if _, err := f.Synthesize(ctx, "Still here.", Voice{Name: FestivalKAL}); err != nil || festivalPid(f) != pid {
		t.Errorf("after an unknown voice: %v, festival %d (want %d)", err, festivalPid(f), pid)
	}
}

// TestFestivalRecovers: a festival that died between sentences (killed,
// or crashed) fails the next sentence and the one after starts a new one;
// a sentence whose caller gave up fails with the caller's error and leaves
// festival running; festival
// idle for Idle is stopped and started again when needed; after Close
// nothing is spoken.
func TestFestivalRecovers(t *testing.T) {
	t.Parallel()
	audiotest.Need(t, "festival")
	// A hang guard for a cancelled sentence, not the default 5 s: on a
	// loaded machine (CI beside stress-ng) the long sentence below took
	// longer, festival was killed as hung, and "kept" failed by the clock.
	f := &Festival{Idle: time.Hour, CancelGrace: 2 * time.Minute}
	t.Cleanup(func() { f.Close() })
	ctx := context.Background()
	say := func(what string) error {
		_, err := f.Synthesize(ctx, "The gate opens at dawn.", Voice{Name: FestivalKAL})
		if err != nil {
			return err
		}
		if festivalPid(f) == 0 {
			t.Fatalf("%s: spoken, but no festival is kept", what)
		}
		return nil
	}
	if err := say("the first"); err != nil {
		t.Fatal(err)
	}
	first := festivalPid(f)

	// Killed between sentences.
	f.mu.Lock()
	f.proc.kill()
	f.mu.Unlock()
	if err := say("after festival was killed"); err == nil {
		t.Error("a sentence sent to a dead festival succeeded")
	}
	if err := say("the next"); err != nil {
		t.Fatalf("the sentence after: %v", err)
	}
	if festivalPid(f) == first {
		t.Fatal("the dead festival is still kept")
	}

	// The caller gave up, before its sentence was sent and while it was
	// spoken (a player talking over the NPC): festival is kept.
	kept := festivalPid(f)
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := f.Synthesize(cctx, "Too late.", Voice{Name: FestivalKAL}); !errors.Is(err, context.Canceled) {
		t.Errorf("a cancelled sentence: %v, want context.Canceled", err)
	}
	cctx, cancel = context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		_, err := f.Synthesize(cctx, "A long answer, of many words, that the player talks over: "+
			"the road to Duskwood is long, the bridge is out, and the ferryman wants silver.", Voice{Name: FestivalSLT})
		done <- err
	}()
	cancel()
	if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
		t.Errorf("a sentence cancelled while spoken: %v, want context.Canceled (or spoken)", err)
	}
	if err := say("after a cancelled one"); err != nil {
		t.Fatal(err)
	}
	if festivalPid(f) != kept {
		t.Errorf("festival %d after a caller gave up, want %d kept", festivalPid(f), kept)
	}

	// Idle: stopped by the timer, started again by the next sentence.
	f.mu.Lock()
	f.Idle = time.Millisecond
	f.mu.Unlock()
	if err := say("before idling"); err != nil {
		t.Fatal(err)
	}
	idled := festivalPid(f)
	guard := time.Now().Add(2 * time.Minute) // a hang guard, not a budget
	for festivalPid(f) != 0 {
		if time.Now().After(guard) {
			t.Fatal("festival still kept after its idle time")
		}
		time.Sleep(10 * time.Millisecond)
	}
	f.mu.Lock()
	f.Idle = time.Hour
	f.mu.Unlock()
	if err := say("after idling"); err != nil {
		t.Fatal(err)
	}
	if festivalPid(f) == idled {
		t.Error("the idle festival was not stopped")
	}

	// Closed.
	f.mu.Lock()
	last := f.proc
	f.mu.Unlock()
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if festivalPid(f) != 0 {
		t.Error("a festival is kept after Close")
	}
	if last.cmd.ProcessState == nil {
		t.Errorf("festival %d was not waited for by Close", last.cmd.Process.Pid)
	}
	if _, err := f.Synthesize(ctx, "Anyone?", Voice{Name: FestivalKAL}); !errors.Is(err, ErrClosed) {
		t.Errorf("after Close: %v, want ErrClosed", err)
	}
}

// TestFestivalSpeaksAsText2wave: the kept festival says a sentence exactly
// as festival's own text2wave, a process of its own, says it (the
// intelligibility ranking was measured with text2wave), whatever voice
// spoke before: each voice sets its own pace, and nothing of one voice
// stays for the next.
func TestFestivalSpeaksAsText2wave(t *testing.T) {
	t.Parallel()
	audiotest.Need(t, "festival")
	audiotest.Need(t, "text2wave")
	const sentence = "Brannoc, what do you know about the Ashen Circle? Vexa was with them."
	want := map[string][]int16{}
	for _, v := range []string{FestivalKAL, FestivalSLT} {
		// To a file: written to a pipe, text2wave cannot seek back to
		// its header and writes it again at the end (22 samples of
		// noise after the speech, which the engine heard before it
		// kept festival running).
		wav := filepath.Join(t.TempDir(), "out.wav")
		cmd := exec.Command("text2wave", "-eval", "(voice_"+v+")", "-o", wav)
		cmd.Stdin = strings.NewReader(sentence)
		if msg, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("text2wave %s: %v: %s", v, err, msg)
		}
		out, err := os.ReadFile(wav)
		if err != nil {
			t.Fatal(err)
		}
		pcm, err := audio.DecodeWAV(out)
		if err != nil {
			t.Fatal(err)
		}
		want[v] = pcm.Samples
	}
	f := &Festival{}
	t.Cleanup(func() { f.Close() })
	for _, v := range []string{FestivalKAL, FestivalSLT, FestivalKED, FestivalKAL, FestivalSLT} {
		p, err := f.Synthesize(context.Background(), sentence, Voice{Name: v})
		if err != nil {
			t.Fatalf("%s: %v", v, err)
		}
		w, ok := want[v]
		if !ok {
			continue
		}
		if !slices.Equal(p.Samples, w) {
			t.Errorf("%s: %d samples unlike text2wave's %d", v, len(p.Samples), len(w))
		}
	}
}

// TestFestivalHungAfterCancelIsKilled: a festival that stops answering
// while a cancelled sentence is under way is killed CancelGrace after the
// cancel, the sentence fails with the caller's error and the festival is
// not kept for the next one. The fake festival reads the first command,
// says so in a file, and hangs.
func TestFestivalHungAfterCancelIsKilled(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	asked := filepath.Join(dir, "asked")
	fake := filepath.Join(dir, "festival")
	script := "#!/bin/sh\nread line\n: > " + asked + "\nexec sleep 3600\n"
	if err := os.WriteFile(fake, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	f := &Festival{Path: fake, Idle: time.Hour, CancelGrace: 10 * time.Millisecond}
	t.Cleanup(func() { f.Close() })
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := f.Synthesize(ctx, "The gate opens at dawn.", Voice{Name: FestivalKAL})
		done <- err
	}()
	guard := time.Now().Add(2 * time.Minute) // a hang guard, not a budget
	for {
		if _, err := os.Stat(asked); err == nil {
			break
		}
		if time.Now().After(guard) {
			t.Fatal("the fake festival was never asked anything")
		}
		time.Sleep(5 * time.Millisecond)
	}
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("the cancelled sentence: %v, want context.Canceled", err)
		}
	case <-time.After(2 * time.Minute): // a hang guard
		t.Fatal("the hung festival was not killed after the cancel")
	}
	if pid := festivalPid(f); pid != 0 {
		t.Errorf("the hung festival %d is still kept", pid)
	}
}
