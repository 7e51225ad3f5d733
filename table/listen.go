package table

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/glyphoxa/glyphoxa/correction"
	"github.com/glyphoxa/glyphoxa/npc"
	"github.com/glyphoxa/glyphoxa/voice/audio"
	"github.com/glyphoxa/glyphoxa/voice/stt"
)

// streamer is a Transcriber that can also listen while the player speaks
// (an stt.StreamRecognizer).
type streamer interface {
	OpenStream(ctx context.Context, h stt.Hints) (stt.Stream, error)
}

// batcher is a streaming Transcriber whose Transcribe streams too
// (*stt.Deepgram): after a stream failed, its batch endpoint is tried.
type batcher interface {
	TranscribeBatch(ctx context.Context, pcm audio.PCM, h stt.Hints) (stt.Transcript, error)
}

// wholeStreamer is a Transcriber whose Transcribe itself sends the
// utterance through a stream (*stt.Deepgram): without STTStreaming the
// table opens that stream when the player starts speaking and, when they
// stop, sends the whole utterance through it (TranscribeStream), so the end
// of speech does not wait for a connection to be set up. What is sent and
// when the recogniser gets it are as with Transcribe.
type wholeStreamer interface {
	streamer
	TranscribeStream(ctx context.Context, st stt.Stream, pcm audio.PCM) (stt.Transcript, error)
}

// keepAliver is a stream that must be kept alive while it waits for audio
// (*stt.DeepgramStream).
type keepAliver interface {
	KeepAlive() error
}

// keepAliveEvery is how often a stream opened for a whole utterance is
// kept alive while the player speaks (stt.KeepAliveEvery).
const keepAliveEvery = stt.KeepAliveEvery

// resulter is a stream that reports interim and final results as they
// come (*stt.DeepgramStream, *stt.RealtimeStream).
type resulter interface {
	Results() <-chan stt.Result
}

// listening is one utterance streamed to speech-to-text while the player
// speaks, or (whole) one whose stream is opened while the player speaks and
// gets the whole utterance when they stop. The lane's goroutine queues audio (onAudio) and ends it
// (onUtterance); its own goroutine, started by the session and counted in
// its WaitGroup, opens the stream, sends what is queued and, once the
// utterance has ended, waits for the final transcript. transcribe takes
// the result; when the stream could not be opened or failed, the
// utterance is transcribed whole instead, so it is never lost.
type listening struct {
	user  string
	whole bool          // the utterance is sent whole once it ended
	wake  chan struct{} // audio was queued or the utterance ended
	done  chan struct{} // closed when tr and err (whole: stream and err) are set

	mu         sync.Mutex
	queue      [][]int16
	ended      bool
	failed     bool            // the stream is gone: stop queueing audio
	prefetched map[string]bool // NPCs whose context a partial transcript started
	addressed  time.Time       // when a partial transcript first addressed an NPC

	tr  stt.Transcript
	err error

	// whole: the stream opened for the utterance, closed once (release).
	stream   stt.Stream
	released sync.Once
}

// release closes a whole utterance's stream once it was opened.
func (l *listening) release() {
	<-l.done
	l.released.Do(func() {
		if l.stream != nil {
			l.stream.Close()
		}
	})
}

func (l *listening) signal() {
	select {
	case l.wake <- struct{}{}:
	default:
	}
}

// end marks the utterance over; the stream finishes.
func (l *listening) end() {
	l.mu.Lock()
	l.ended = true
	l.mu.Unlock()
	l.signal()
}

// result waits for the stream's final transcript.
func (l *listening) result(ctx context.Context) (stt.Transcript, error) {
	select {
	case <-l.done:
		return l.tr, l.err
	case <-ctx.Done():
		return stt.Transcript{}, fmt.Errorf("waiting for the streamed transcript: %w", ctx.Err())
	}
}

// hints are the speech-to-text hints for an utterance starting now.
func (s *Session) hints() stt.Hints {
	return stt.Hints{Keyterms: s.cast.Keyterms(s.cfg.Providers.STTProvider, s.scene(), s.cfg.Clock.Now()),
		Language: s.cfg.Providers.Language}
}

// onAudio opens a stream at the start of each utterance and queues its
// audio; it runs on the router's goroutine and never blocks.
func (s *Session) onAudio(c audio.Chunk) {
	st, ok := s.cfg.Providers.STT.(streamer)
	if !ok {
		return
	}
	if (*s.optedOut.Load())[c.UserID] {
		// A player who opted out is not transcribed: none of their audio
		// leaves the process (transcribeLoop drops their utterance).
		return
	}
	s.mu.Lock()
	l := s.listening[c.UserID]
	if c.Start {
		if l != nil { // never ended (cannot happen: the lane ends it first)
			l.end()
		}
		l = &listening{user: c.UserID, whole: s.whole != nil, wake: make(chan struct{}, 1), done: make(chan struct{}),
			prefetched: map[string]bool{}}
		s.listening[c.UserID] = l
		// The router's goroutine is counted in s.wg, so the count is above
		// zero here and Add cannot race End's Wait.
		s.wg.Add(1)
		if l.whole {
			go s.listenWhole(l)
		} else {
			go s.listen(st, l)
		}
	}
	s.mu.Unlock()
	if l == nil || l.whole || len(c.Samples) == 0 {
		return
	}
	l.mu.Lock()
	if !l.failed && !l.ended {
		l.queue = append(l.queue, append([]int16(nil), c.Samples...))
	}
	l.mu.Unlock()
	l.signal()
}

// takeListening returns and forgets the open stream of a user's utterance.
func (s *Session) takeListening(user string) *listening {
	s.mu.Lock()
	defer s.mu.Unlock()
	l := s.listening[user]
	delete(s.listening, user)
	return l
}

// listen runs one utterance's stream until its final transcript.
func (s *Session) listen(st streamer, l *listening) {
	defer s.wg.Done()
	defer close(l.done)
	fail := func(err error) {
		l.mu.Lock()
		l.failed, l.queue = true, nil
		l.mu.Unlock()
		l.err = err
	}
	stream, err := st.OpenStream(s.work, s.hints())
	if err != nil {
		fail(fmt.Errorf("opening the speech-to-text stream: %w", err))
		return
	}
	var readers sync.WaitGroup
	defer readers.Wait()
	defer stream.Close()
	if rs, ok := stream.(resulter); ok {
		readers.Add(1)
		go func() { defer readers.Done(); s.follow(l, rs.Results()) }()
	}
	for {
		select {
		case <-l.wake:
		case <-s.work.Done():
			fail(fmt.Errorf("streaming speech-to-text: %w", s.work.Err()))
			return
		}
		l.mu.Lock()
		queue, ended := l.queue, l.ended
		l.queue = nil
		l.mu.Unlock()
		for _, q := range queue {
			if err := stream.Send(q); err != nil {
				fail(fmt.Errorf("streaming speech-to-text: %w", err))
				return
			}
		}
		if !ended {
			continue
		}
		ctx, cancel := context.WithTimeout(s.work, s.streamBound())
		l.tr, l.err = stream.Finish(ctx)
		cancel()
		return
	}
}

// listenWhole opens the stream of a whole utterance while the player
// speaks and keeps it alive until the utterance ends; recognize sends the
// utterance through it and releases it.
func (s *Session) listenWhole(l *listening) {
	defer s.wg.Done()
	stream, err := s.whole.OpenStream(s.work, s.hints())
	if err != nil {
		err = fmt.Errorf("opening the speech-to-text stream: %w", err)
	}
	l.stream, l.err = stream, err
	close(l.done)
	if err != nil {
		return
	}
	ka, _ := stream.(keepAliver)
	if ka == nil {
		return
	}
	for {
		alive := s.cfg.Clock.NewTimer(keepAliveEvery)
		select {
		case <-l.wake:
		case <-alive.C():
		case <-s.work.Done():
			alive.Stop()
			l.release()
			return
		}
		alive.Stop()
		l.mu.Lock()
		ended := l.ended
		l.mu.Unlock()
		if ended {
			return
		}
		if err := ka.KeepAlive(); err != nil {
			// The utterance goes to Transcribe when it ends (recognize).
			s.log.Debug("keeping the speech-to-text stream open failed", "user", l.user, "err", err)
			return
		}
	}
}

// releaseLater releases a whole utterance's stream that will not be used,
// without waiting for it to be opened.
func (s *Session) releaseLater(l *listening) {
	if l == nil || !l.whole {
		return
	}
	s.wg.Add(1)
	go func() { defer s.wg.Done(); l.release() }()
}

// follow reads a stream's results while the player speaks: each time the
// words heard so far address an NPC, that NPC's hot context starts being
// assembled (once per NPC and utterance), so the answer can start sooner
// after the player stops. The final transcript alone is recorded.
func (s *Session) follow(l *listening, results <-chan stt.Result) {
	var finals []string
	for r := range results {
		text := strings.TrimSpace(r.Transcript.Text)
		switch r.Kind {
		case stt.Final:
			if text != "" {
				finals = append(finals, text)
			}
			text = ""
		case stt.Interim:
		default:
			continue
		}
		s.heardSoFar(l, strings.TrimSpace(strings.Join(append(finals[:len(finals):len(finals)], text), " ")), r.Transcript.Words)
	}
}

// heardSoFar addresses the words of an utterance heard so far (with the
// phonetic name correction, not the LLM's) and prefetches the context of
// the NPC they are for.
func (s *Session) heardSoFar(l *listening, text string, words []stt.Word) {
	p, ok := s.agent.(prefetcher)
	if !ok || text == "" || !s.mayAddress(l.user, s.cfg.Clock.Now()) {
		return
	}
	u := correction.Utterance{Text: text, Words: words, InPlay: s.cast.InPlay(s.scene(), s.cfg.Clock.Now())}
	if c := strings.TrimSpace(s.cast.Pipeline().Correct(u).Text); c != "" {
		text = c
	}
	d := s.addr.Peek(npc.AddressInput{Text: text, SpeakerID: l.user, At: s.cfg.Clock.Now(),
		Present: s.cfg.Controls.PresentNPCs()})
	if d.NPCID == "" {
		return
	}
	l.mu.Lock()
	seen := l.prefetched[d.NPCID]
	l.prefetched[d.NPCID] = true
	if l.addressed.IsZero() {
		l.addressed = s.cfg.Clock.Now()
	}
	l.mu.Unlock()
	if seen {
		return
	}
	s.log.Debug("addressed while speaking; assembling the NPC's context", "user", l.user, "npc", d.NPCID, "heard", text)
	p.Prefetch(s.work, d.NPCID, s.id)
}

// prefetchedEarly reports whether a partial transcript of the user's open
// utterance already started npcID's context.
func (s *Session) prefetchedEarly(user, npcID string) bool {
	s.mu.Lock()
	l := s.listening[user]
	s.mu.Unlock()
	if l == nil {
		return false
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.prefetched[npcID]
}

// streamBound is how long a stream is given for its final transcript
// once the utterance ended (Settings.StreamFinalTimeout).
func (s *Session) streamBound() time.Duration { return s.cfg.Settings.StreamFinalTimeout }

// recognize is the utterance's transcript: the streamed one when it was
// streamed, else (or when the stream failed) the whole utterance's.
func (s *Session) recognize(ctx context.Context, u utterance) (stt.Transcript, error) {
	if l := u.listen; l != nil && l.whole {
		select {
		case <-l.done:
		case <-ctx.Done():
			s.releaseLater(l)
			return stt.Transcript{}, fmt.Errorf("waiting for the speech-to-text stream: %w", ctx.Err())
		}
		err := l.err
		if err == nil {
			sctx, cancel := context.WithTimeout(ctx, s.streamBound())
			var t stt.Transcript
			t, err = s.whole.TranscribeStream(sctx, l.stream, u.Audio)
			cancel()
			l.release()
			if err == nil {
				return t, nil
			}
			if ctx.Err() != nil {
				return stt.Transcript{}, err
			}
			// The stream took the audio and failed (or never answered):
			// another stream may do the same, the batch endpoint is tried.
			if b, ok := s.cfg.Providers.STT.(batcher); ok {
				s.log.Warn("the speech-to-text stream failed; transcribing the utterance whole", "user", u.UserID, "err", err)
				return b.TranscribeBatch(ctx, u.Audio, s.hints())
			}
		}
		if ctx.Err() != nil {
			return stt.Transcript{}, err
		}
		// As Transcribe would have: a stream of its own, then the batch
		// endpoint.
		s.log.Warn("the speech-to-text stream opened ahead failed; transcribing the utterance whole", "user", u.UserID, "err", err)
		return s.cfg.Providers.STT.Transcribe(ctx, u.Audio, s.hints())
	}
	if u.listen != nil {
		t, err := u.listen.result(ctx)
		if err == nil {
			return t, nil
		}
		if ctx.Err() != nil {
			return stt.Transcript{}, err
		}
		s.log.Warn("streaming speech-to-text failed; transcribing the utterance whole", "user", u.UserID, "err", err)
		if b, ok := s.cfg.Providers.STT.(batcher); ok {
			return b.TranscribeBatch(ctx, u.Audio, s.hints())
		}
	}
	return s.cfg.Providers.STT.Transcribe(ctx, u.Audio, s.hints())
}

// addressedAt is when a partial transcript first addressed an NPC (zero:
// never, or l is nil).
func (l *listening) addressedAt() time.Time {
	if l == nil {
		return time.Time{}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.addressed
}
