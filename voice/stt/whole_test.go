package stt_test

import (
	"context"
	"errors"
	"testing"

	"github.com/glyphoxa/glyphoxa/voice/audio"
	"github.com/glyphoxa/glyphoxa/voice/audio/audiotest"
	"github.com/glyphoxa/glyphoxa/voice/stt"
	"github.com/glyphoxa/glyphoxa/voice/stt/stttest"
)

// TestDeepgramTranscribeStream: a stream opened before the utterance,
// kept alive while it waits (Deepgram's KeepAlive), takes the whole
// utterance as Transcribe would send it and gives its final transcript;
// empty audio is refused before anything is sent.
func TestDeepgramTranscribeStream(t *testing.T) {
	audiotest.CheckLeaks(t)
	u := utterance(t, said)
	fake := stttest.NewDeepgram(func(stttest.Call) string { return said })
	defer fake.Close()
	dg := &stt.Deepgram{APIKey: "k3y", BaseURL: fake.URL, NoFallback: true}
	ctx := context.Background()
	for _, tc := range []struct {
		name    string
		pcm     audio.PCM
		wantErr error
	}{
		{"utterance", u.Audio, nil},
		{"empty", audio.PCM{Rate: audio.Rate}, stt.ErrNoAudio},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st, err := dg.Stream(ctx, stt.Hints{Keyterms: campaign})
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			for range 3 {
				if err := st.KeepAlive(); err != nil {
					t.Fatalf("keep alive: %v", err)
				}
			}
			before := len(fake.Calls())
			tr, err := dg.TranscribeStream(ctx, st, tc.pcm)
			if tc.wantErr != nil {
				if !errors.Is(err, tc.wantErr) {
					t.Fatalf("error %v, want %v", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if tr.Text != said {
				t.Errorf("text %q, want %q", tr.Text, said)
			}
			calls := fake.Calls()
			if len(calls) != before+1 || !calls[len(calls)-1].Stream {
				t.Fatalf("fake got %d more calls, want one stream", len(calls)-before)
			}
			checkReceived(t, calls[len(calls)-1].Audio, u)
		})
	}
}
