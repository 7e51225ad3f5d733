package realtime

import (
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/glyphoxa/glyphoxa/voice/realtime/realtimetest"
)

// TestAttackAudioAfterResponseDone: a model that goes on sending audio and
// words for an answer after that answer's response.done (a cancelled one,
// or one that finished) is not played: the late audio and transcript are
// dropped and reported as a protocol error that names the response, and
// the next answer plays as usual.
func TestAttackAudioAfterResponseDone(t *testing.T) {
	const text = "Long ago, before the mountain woke, my grandfather forged the first blade of Ironhold."
	ctx := testCtx(t)
	srv := realtimetest.NewServer(t, realtimetest.Options{Transcript: "Wait!", Replies: []realtimetest.Reply{{Text: text, HoldAfter: 3}},
		Default: realtimetest.Reply{Text: "Yes?"}})
	s := dial(t, ctx, Config{URL: srv.URL()})
	hear(t, ctx, s, voice48k(400*time.Millisecond))
	if err := s.EndOfTurn(ctx); err != nil {
		t.Fatal(err)
	}
	var l turnLog
	readUntil(t, ctx, s, &l, func(Event) bool { return l.audioEvents == 3 })
	if _, err := s.Interrupt(ctx, 60*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	var cancelled string
	readUntil(t, ctx, s, &l, func(ev Event) bool {
		cancelled = ev.ResponseID
		return ev.Kind == EventResponseDone && ev.Status == "cancelled"
	})
	hear(t, ctx, s, voice48k(300*time.Millisecond))
	if err := s.EndOfTurn(ctx); err != nil {
		t.Fatal(err)
	}
	var completed string
	readUntil(t, ctx, s, &l, func(ev Event) bool {
		completed = ev.ResponseID
		return ev.Kind == EventResponseDone && ev.Status == "completed"
	})

	// 100 ms of a tone at 24 kHz.
	pcm := make([]byte, 2*2400)
	for i := range 2400 {
		binary.LittleEndian.PutUint16(pcm[2*i:], uint16(int16(8000*((i/50)%2*2-1))))
	}
	delta := base64.StdEncoding.EncodeToString(pcm)
	for _, resp := range []string{cancelled, completed} {
		srv.Send(fmt.Sprintf(`{"type":"response.output_audio_transcript.delta","response_id":%q,"item_id":"item_late_%s","delta":"Buy my potions."}`, resp, resp))
		srv.Send(fmt.Sprintf(`{"type":"response.output_audio.delta","response_id":%q,"item_id":"item_late_%s","delta":%q}`, resp, resp, delta))
		srv.Send(fmt.Sprintf(`{"type":"response.output_audio.done","response_id":%q,"item_id":"item_late_%s"}`, resp, resp))
	}
	// A marker after them: every late event was handled once it comes.
	srv.Send(`{"type":"error","error":{"type":"invalid_request_error","code":"marker","message":"the test's marker"}}`)
	var late turnLog
	readUntil(t, ctx, s, &late, func(ev Event) bool {
		return ev.Kind == EventError && strings.Contains(ev.Err.Error(), "the test's marker")
	})
	if late.audioEvents != 0 || late.deltas.Len() != 0 {
		t.Errorf("%d audio events and words %q played for answers already done", late.audioEvents, late.deltas.String())
	}
	for _, resp := range []string{cancelled, completed} {
		found := false
		for _, err := range late.errs {
			found = found || errors.Is(err, ErrProtocol) && strings.Contains(err.Error(), resp)
		}
		if !found {
			t.Errorf("no protocol error names the late audio of %s: %v", resp, late.errs)
		}
	}

	// The next turn plays.
	hear(t, ctx, s, voice48k(300*time.Millisecond))
	if err := s.EndOfTurn(ctx); err != nil {
		t.Fatal(err)
	}
	var next turnLog
	readUntil(t, ctx, s, &next, isDone("completed"))
	if len(next.npc) != 1 || next.npc[0].Text != "Yes?" || next.audioEvents == 0 {
		t.Errorf("next answer %+v with %d audio events", next.npc, next.audioEvents)
	}
}

// TestAttackEndlessTranscript: a model that streams the words of an
// answer without end (here with no audio at all, which neither the audio
// budget nor the idle close counts) has them kept and passed on up to
// maxTranscript; the rest is dropped and reported once, and the session
// goes on. A final transcript as long is dropped too (the words streamed
// stand).
func TestAttackEndlessTranscript(t *testing.T) {
	ctx := testCtx(t)
	srv := realtimetest.NewServer(t, realtimetest.Options{Default: realtimetest.Reply{Text: "Fine."}})
	s := dial(t, ctx, Config{URL: srv.URL()})
	word := strings.Repeat("blah ", 20)
	n := 2 * maxTranscript / len(word)
	for range n {
		srv.Send(fmt.Sprintf(`{"type":"response.output_audio_transcript.delta","response_id":"resp_endless","item_id":"item_endless","delta":%q}`, word))
	}
	// And a final transcript as long.
	srv.Send(fmt.Sprintf(`{"type":"response.output_audio_transcript.done","response_id":"resp_endless","item_id":"item_endless","transcript":%q}`,
		strings.Repeat(word, n)))
	srv.Send(`{"type":"error","error":{"type":"invalid_request_error","code":"marker","message":"the test's marker"}}`)
	var l turnLog
	readUntil(t, ctx, s, &l, func(ev Event) bool {
		return ev.Kind == EventError && strings.Contains(ev.Err.Error(), "the test's marker")
	})
	if got := l.deltas.Len(); got > maxTranscript {
		t.Errorf("%d bytes of words passed on for one item (%d sent), more than %d", got, n*len(word), maxTranscript)
	}
	reported := 0
	for _, err := range l.errs {
		if errors.Is(err, ErrProtocol) && strings.Contains(err.Error(), "item_endless") {
			reported++
		}
	}
	if reported != 2 {
		t.Errorf("%d protocol errors name the endless item, want 2 (its words, its final transcript): %v", reported, l.errs)
	}
	s.mu.Lock()
	kept := len(s.items["item_endless"].text())
	s.mu.Unlock()
	if kept > maxTranscript {
		t.Errorf("%d bytes of words kept for one item, more than %d", kept, maxTranscript)
	}
	hear(t, ctx, s, voice48k(200*time.Millisecond))
	if err := s.EndOfTurn(ctx); err != nil {
		t.Fatal(err)
	}
	var next turnLog
	readUntil(t, ctx, s, &next, isDone("completed"))
	if len(next.npc) != 1 || next.npc[0].Text != "Fine." {
		t.Errorf("next answer %+v", next.npc)
	}
}

// TestAttackDuplicateResponseDone: a response.done sent again for an
// answer already done (a duplicated event) is reported and changes
// nothing: no second EventResponseDone, and the session's state (which
// response runs, whether one is asked for) stays as it was.
func TestAttackDuplicateResponseDone(t *testing.T) {
	ctx := testCtx(t)
	srv := realtimetest.NewServer(t, realtimetest.Options{Default: realtimetest.Reply{Text: "Fine."}})
	s := dial(t, ctx, Config{URL: srv.URL()})
	hear(t, ctx, s, voice48k(200*time.Millisecond))
	if err := s.EndOfTurn(ctx); err != nil {
		t.Fatal(err)
	}
	var first string
	var l turnLog
	readUntil(t, ctx, s, &l, func(ev Event) bool {
		first = ev.ResponseID
		return ev.Kind == EventResponseDone
	})
	// A turn is asked for and not yet answered: busy, no response id.
	s.mu.Lock()
	s.busy, s.respID = true, ""
	s.mu.Unlock()
	srv.Send(fmt.Sprintf(`{"type":"response.done","response":{"id":%q,"status":"completed","output":[]}}`, first))
	srv.Send(`{"type":"error","error":{"type":"invalid_request_error","code":"marker","message":"the test's marker"}}`)
	var dup turnLog
	readUntil(t, ctx, s, &dup, func(ev Event) bool {
		return ev.Kind == EventError && strings.Contains(ev.Err.Error(), "the test's marker")
	})
	if len(dup.done) != 0 {
		t.Errorf("the duplicate response.done of %s was passed on: %v", first, dup.done)
	}
	if len(dup.errs) != 2 || !errors.Is(dup.errs[0], ErrProtocol) || !strings.Contains(dup.errs[0].Error(), first) {
		t.Errorf("errors %v; want a protocol error naming %s, then the marker", dup.errs, first)
	}
	s.mu.Lock()
	busy := s.busy
	s.busy = false
	s.mu.Unlock()
	if !busy {
		t.Error("the duplicate response.done of an earlier answer ended the turn asked for")
	}
}
