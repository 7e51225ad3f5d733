package main

import (
	"log/slog"
	"testing"

	"github.com/glyphoxa/glyphoxa/cmd/glyphoxa/internal/config"
	"github.com/glyphoxa/glyphoxa/voice/stt"
)

// TestRecognizerStreaming: providers.stt.streaming picks the streaming
// engine of each provider that has one.
func TestRecognizerStreaming(t *testing.T) {
	t.Parallel()
	log := slog.New(slog.DiscardHandler)
	for _, tc := range []struct {
		c    config.STT
		want string
	}{
		{config.STT{Provider: "openai"}, "*stt.OpenAI"},
		{config.STT{Provider: "openai", Streaming: true}, "*stt.OpenAIRealtime"},
		{config.STT{Provider: "deepgram", APIKey: "k", Streaming: true}, "*stt.Deepgram"},
	} {
		rec, err := newRecognizer(tc.c, log)
		if err != nil {
			t.Fatal(err)
		}
		var got string
		switch r := rec.(type) {
		case *stt.OpenAIRealtime:
			got = "*stt.OpenAIRealtime"
		case *stt.OpenAI:
			got = "*stt.OpenAI"
		case *stt.Deepgram:
			got = "*stt.Deepgram"
			if _, ok := any(r).(stt.StreamRecognizer); !ok {
				t.Fatal("Deepgram cannot stream")
			}
		}
		if got != tc.want {
			t.Errorf("%+v: %T, want %s", tc.c, rec, tc.want)
		}
	}
}
