package audio_test

import (
	"context"
	"fmt"
	"log"

	"github.com/glyphoxa/glyphoxa/voice/audio"
	"github.com/glyphoxa/glyphoxa/voice/playback"
	"github.com/glyphoxa/glyphoxa/voice/stt"
)

// Example wires the listening half of a voice channel: packets go to a
// router, its lanes stream speech to Deepgram and hand finished utterances
// to a transcriber, and a player talking over the NPC stops it.
func Example() {
	var player *playback.Player // the NPC's voice, made with playback.New
	tr := stt.NewTranscriber(&stt.Deepgram{APIKey: "…"}, func(h stt.Heard) {
		if h.Err != nil {
			log.Printf("%s said something we could not transcribe: %v", h.UserID, h.Err)
			return
		}
		fmt.Printf("%s (%v–%v): %s\n", h.UserID, h.Start, h.End, h.Text)
	}, stt.TranscriberConfig{Keyterms: stt.KeytermList{"Grimjaw", "Ironhold", "Tower of Whispers"}})
	defer tr.Close(context.Background())

	router, err := audio.NewRouter(audio.Config{
		OnAudio:     tr.Audio,
		OnUtterance: tr.Submit,
		OnEvent: func(e audio.Event) {
			if player != nil {
				player.OnSpeech(e) // barge-in after 250 ms of speech
			}
		},
	})
	if err != nil {
		log.Fatal(err)
	}
	packets := make(chan audio.Packet) // from the voice connection
	close(packets)
	if err := router.Run(context.Background(), packets, nil); err != nil {
		log.Fatal(err)
	}
}
