package scene

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/glyphoxa/glyphoxa/internal/clock"
	"github.com/glyphoxa/glyphoxa/internal/clock/clocktest"
	"github.com/glyphoxa/glyphoxa/lifecycle/postsession"
	"github.com/glyphoxa/glyphoxa/lifecycle/witness"
	"github.com/glyphoxa/glyphoxa/memory"
	"github.com/glyphoxa/glyphoxa/memory/access"
	"github.com/glyphoxa/glyphoxa/table"
	"github.com/glyphoxa/glyphoxa/table/live"
	"github.com/glyphoxa/glyphoxa/voice/audio"
	"github.com/glyphoxa/glyphoxa/voice/playback"
	"github.com/glyphoxa/glyphoxa/voice/stt"
	"github.com/glyphoxa/glyphoxa/voice/tts"
)

// Options configure a play.
type Options struct {
	// Campaign is the campaign's memory opened for the DM through the door
	// (memory/access).
	Campaign *access.Campaign
	// Providers are the table's: STT recognises the lines that give no
	// heard text; Speaker is replaced by Voices on Options.NPCVoice played
	// without pacing, so the NPCs' speech costs no virtual time.
	Providers table.Providers
	Settings  table.Settings
	// PlayerVoice synthesises the players' lines (default espeak-ng);
	// NPCVoice the NPCs' (default PlayerVoice).
	PlayerVoice, NPCVoice tts.Synthesizer
	// NPCVoiceName is the NPCs' default voice name.
	NPCVoiceName string
	// PlayerVoices are the voices of players the scene gives none, in
	// turn (default: PlayerVoice's default).
	PlayerVoices []string
	// OutDir, if set, receives each spoken NPC reply as a WAV file.
	OutDir string
	// OnEvent receives every line and command as it is done.
	OnEvent func(Event)
	// OnOpen, if set, receives the table session once it is open (the
	// demo shows it on the console's Live page); it must not block.
	OnOpen func(*table.Session)
	// OnRecorded, if set, receives each player line once it is recorded
	// (table.Config.OnRecorded: the demo checks it for continuity); it
	// must return at once.
	OnRecorded func(memory.TranscriptEntry)
	// LineTimeout bounds, in real time, the wait for the table to finish
	// one line (default 3 min).
	LineTimeout time.Duration
	Logger      *slog.Logger
}

// Event is a line or a command of the scene, once done.
type Event struct {
	// Line is set for a line: what the table did with it, and what the
	// player said.
	Line *LineEvent `json:"line,omitempty"`
	// Command is set for a command.
	Command *CommandEvent `json:"command,omitempty"`
}

// LineEvent is a line as the table handled it (see table.LineReport).
type LineEvent struct {
	table.LineReport
	// Said is what the script has the player say.
	Said string `json:"said"`
	// Audio is the NPC reply's WAV file, when written.
	Audio string `json:"audio,omitempty"`
	// Spoken is set when the line was synthesised and recognised (the
	// scene gave no heard text).
	Spoken bool `json:"spoken"`
	// Also are the answers of the other NPCs named with the first, in
	// the order they answered.
	Also []table.LineReport `json:"also,omitempty"`
}

// CommandEvent is a command and its outcome.
type CommandEvent struct {
	At      time.Time `json:"at"`
	Command string    `json:"command"`
	By      string    `json:"by"`
	Result  string    `json:"result"`
	Error   string    `json:"error,omitempty"`
}

// Result sums up a play.
type Result struct {
	SessionID string
	Lines     []LineEvent
	Commands  []CommandEvent
	// Report is post-session processing's.
	Report postsession.Report
	// Took is the scene's virtual length.
	Took time.Duration
	// Witness is what each NPC witnessed of the scene (readable after it
	// ended).
	Witness *witness.Log
}

// instant is the system clock whose timers fire at once: NPC speech plays
// as fast as it is synthesised.
type instant struct{}

func (instant) Now() time.Time { return time.Now() }
func (instant) NewTimer(time.Duration) clock.Timer {
	c := make(chan time.Time, 1)
	c <- time.Now()
	return fired(c)
}

type fired chan time.Time

func (f fired) C() <-chan time.Time { return f }
func (fired) Stop() bool            { return false }

// recognizer answers the lines that give heard text themselves and passes
// the others to the real engine. Lines are played one at a time, so the
// next utterance is the expected line's.
type recognizer struct {
	real table.Transcriber

	mu     sync.Mutex
	heard  *string
	called chan struct{}
}

func (r *recognizer) expect(heard *string) {
	r.mu.Lock()
	r.heard = heard
	r.called = make(chan struct{})
	r.mu.Unlock()
}

func (r *recognizer) Transcribe(ctx context.Context, pcm audio.PCM, h stt.Hints) (stt.Transcript, error) {
	r.mu.Lock()
	heard, called := r.heard, r.called
	r.heard, r.called = nil, nil
	r.mu.Unlock()
	if called != nil {
		close(called)
	}
	if heard != nil {
		var t stt.Transcript
		t.Text = *heard
		for _, w := range strings.Fields(*heard) {
			t.Words = append(t.Words, stt.Word{Text: w, Confidence: 0.9})
		}
		return t, nil
	}
	return r.real.Transcribe(ctx, pcm, h)
}

// Play plays f through a table session on o.Campaign and ends the session
// (post-session processing included).
func Play(ctx context.Context, f *File, o Options) (Result, error) {
	res := Result{SessionID: f.Session}
	if o.Campaign == nil {
		return res, errors.New("scene: a campaign is required")
	}
	if o.PlayerVoice == nil {
		o.PlayerVoice = tts.Espeak{}
	}
	if o.NPCVoice == nil {
		o.NPCVoice = o.PlayerVoice
	}
	if o.LineTimeout <= 0 {
		o.LineTimeout = 3 * time.Minute
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Providers.STT == nil {
		o.Providers.STT = unavailable{}
	}
	k := 0
	for i := range f.Players {
		if f.Players[i].Voice == "" && len(o.PlayerVoices) > 0 {
			f.Players[i].Voice = o.PlayerVoices[k%len(o.PlayerVoices)]
			k++
		}
	}
	clk := clocktest.NewFake(f.Start)
	var users []string
	for _, p := range f.Players {
		users = append(users, p.ID)
	}
	tr := newTransport(users)
	rec := &recognizer{real: o.Providers.STT}
	prov := o.Providers
	prov.STT = rec
	prov.Speaker = &table.Voices{Default: o.NPCVoice, DefaultVoice: o.NPCVoiceName, Clock: instant{}, Logger: o.Logger}
	controls := live.NewControls()
	reports := make(chan table.LineReport, 16)
	names := map[string]string{}
	for _, p := range f.Players {
		names[p.ID] = p.Name
	}
	s, err := table.Open(ctx, table.Config{Campaign: o.Campaign, SessionID: f.Session, Voice: tr,
		Providers: prov, Settings: o.Settings, Controls: controls, Clock: clk, Logger: o.Logger,
		UserName: func(id string) string {
			if n, ok := names[id]; ok {
				return n
			}
			return id
		},
		OnLine: func(r table.LineReport) { reports <- r }, OnRecorded: o.OnRecorded})
	if err != nil {
		return res, err
	}
	res.Witness = s.Witness()
	if o.OnOpen != nil {
		o.OnOpen(s)
	}
	p := &player{f: f, o: o, clk: clk, tr: tr, rec: rec, s: s, controls: controls, reports: reports}
	playErr := p.run(ctx, &res)
	res.Took = clk.Now().Sub(f.Start)
	// Scene time goes on while the session ends (a second every
	// endTick), so that the memory guard's probe, which runs on scene time,
	// keeps looking for the database while End waits for the outage spool
	// to drain (Settings.DrainTimeout, in real time).
	ended := make(chan struct{})
	ticking := make(chan struct{})
	go func() {
		defer close(ticking)
		t := time.NewTicker(endTick)
		defer t.Stop()
		for {
			select {
			case <-ended:
				return
			case <-t.C:
				clk.Advance(time.Second)
			}
		}
	}()
	rep, err := s.Finish(context.WithoutCancel(ctx))
	close(ended)
	<-ticking
	res.Report = rep
	return res, errors.Join(playErr, err)
}

// endTick is how often a second of scene time passes while the session
// ends.
const endTick = 50 * time.Millisecond

type player struct {
	f        *File
	o        Options
	clk      *clocktest.Fake
	tr       *transport
	rec      *recognizer
	s        *table.Session
	controls *live.Controls
	reports  chan table.LineReport
	seq      map[string]uint16
	ts       map[string]uint32
	last     map[string]time.Time // when each player's last frame was sent
	opted    map[string]time.Time // who opted out, as last read
	replies  int
	// late are answers to names said alone earlier (table.LineReport.Late),
	// reported before the next line's.
	late []LineEvent
	// held is the virtual time a name said alone was reported held, while
	// no later line has been played (zero otherwise); early are reports
	// that came while wait waited for its late answer.
	held  time.Time
	early []table.LineReport
	// voiced are the frames of the longest voiced sound (voicedFrames).
	voiced [][]byte
}

func (p *player) run(ctx context.Context, res *Result) error {
	p.seq, p.ts, p.last = map[string]uint16{}, map[string]uint32{}, map[string]time.Time{}
	for _, st := range p.f.Lines {
		if err := ctx.Err(); err != nil {
			return err
		}
		p.wait(time.Duration(st.After))
		if st.Command != "" {
			ev := p.command(ctx, st)
			res.Commands = append(res.Commands, ev)
			if p.o.OnEvent != nil {
				p.o.OnEvent(Event{Command: &ev})
			}
			continue
		}
		ev, err := p.line(ctx, st)
		if err != nil {
			return err
		}
		if ev.Held {
			p.held = p.clk.Now()
		}
		for _, l := range p.late {
			res.Lines = append(res.Lines, l)
			if p.o.OnEvent != nil {
				p.o.OnEvent(Event{Line: &l})
			}
		}
		p.late = nil
		res.Lines = append(res.Lines, ev)
		if p.o.OnEvent != nil {
			p.o.OnEvent(Event{Line: &ev})
		}
	}
	return nil
}

// step moves virtual time forward by d and lets the table's periodic work
// (audio ticks, name refresh, consolidation) catch up: every timer of the
// table is periodic, so it waits until the timers that fired are armed
// again, which their goroutines do once their work for this tick is done.
func (p *player) step(d time.Duration) {
	before := len(p.clk.Pending())
	p.clk.Advance(d)
	ctx, cancel := context.WithTimeout(context.Background(), stepPatience)
	p.clk.WaitTimers(ctx, before)
	cancel()
}

// stepPatience bounds, in real time, the wait for the table's periodic work
// after one step of virtual time.
const stepPatience = 2 * time.Second

// wait lets d pass, in steps of a second at most. Once a name said alone
// has waited out the table's merge wait, virtual time stops until its late
// answer is reported: the table answers it in real time, and on a loaded
// machine the next line, played at once, would otherwise talk over it.
func (p *player) wait(d time.Duration) {
	for d > 0 {
		s := min(d, maxStep)
		p.step(s)
		d -= s
		if !p.held.IsZero() && !p.clk.Now().Before(p.held.Add(p.mergeWait())) {
			p.awaitLate()
		}
	}
}

// advance lets d pass in steps of maxStep at most.
func (p *player) advance(d time.Duration) {
	for d > 0 {
		s := min(d, maxStep)
		p.step(s)
		d -= s
	}
}

// maxStep is the longest step of virtual time: the table's periodic work
// (name refresh every 2 s, the lanes' ticks) runs at least once a second
// of scene time.
const maxStep = time.Second

// mergeWait is the table's wait for the rest of a name said alone.
func (p *player) mergeWait() time.Duration {
	if p.o.Settings.MergeWait > 0 {
		return p.o.Settings.MergeWait
	}
	return table.DefaultMergeWait
}

// awaitLate waits, in real time and for LineTimeout at most, for the late
// answer to the name held; other reports that come first are kept for
// result. A table that never answers (its recording failed) lets the scene
// go on after LineTimeout: what was answered is for the caller to judge.
func (p *player) awaitLate() {
	p.held = time.Time{}
	t := time.NewTimer(p.o.LineTimeout)
	defer t.Stop()
	for {
		select {
		case r := <-p.reports:
			if !r.Late {
				p.early = append(p.early, r)
				continue
			}
			p.late = append(p.late, LineEvent{LineReport: r, Audio: p.keepReply(r)})
			return
		case <-t.C:
			return
		}
	}
}

// line plays one player's line and waits for the table to be done with it.
func (p *player) line(ctx context.Context, st Step) (LineEvent, error) {
	p.held = time.Time{} // joined by this line, or answered while it plays
	pl := p.f.player(st.Speaker)
	frames, err := p.frames(ctx, pl, st)
	if err != nil {
		return LineEvent{}, err
	}
	// Whether the table will drop the line (the database may be down: then
	// the table goes by what it read last, and so does the player).
	opted, err := p.o.Campaign.OptedOut(ctx)
	if err == nil {
		p.opted = opted
	}
	_, optedOut := p.opted[pl.ID]
	p.rec.expect(st.Heard)
	p.rec.mu.Lock()
	called := p.rec.called
	p.rec.mu.Unlock()
	ssrc := uint32(1000)
	for i, u := range p.f.Players {
		if u.ID == pl.ID {
			ssrc += uint32(i)
		}
	}
	// A Discord client's RTP clock runs on through silence (it sends
	// nothing then): the timestamp moves on by the time since its last
	// frame.
	start := p.clk.Now()
	if last, ok := p.last[pl.ID]; ok {
		p.ts[pl.ID] += uint32(start.Sub(last) / playback.FrameDuration * 960)
	}
	// The frames arrive as Discord delivers them, one every 20 ms: each is
	// stamped with its arrival in scene time (the lanes time the audio and
	// the rate limit by it), so the line is sent at once and then its
	// length passes, in steps, rather than in a step per frame. A frame
	// arrives once its 20 ms were spoken (the lanes date its audio back
	// from its arrival), so the first arrives a frame after the line
	// starts: the line is said at start (the scene's start, or a
	// command's time), not a frame before it.
	for i, fr := range frames {
		at := start.Add(time.Duration(i+1) * playback.FrameDuration)
		if err := p.tr.send(ctx, audio.Packet{UserID: pl.ID, SSRC: ssrc, Sequence: p.seq[pl.ID], Timestamp: p.ts[pl.ID],
			Opus: fr, Received: at}); err != nil {
			return LineEvent{}, err
		}
		p.seq[pl.ID]++
		p.ts[pl.ID] += 960
	}
	p.advance(time.Duration(len(frames)) * playback.FrameDuration)
	p.last[pl.ID] = p.clk.Now()
	p.advance(playback.FrameDuration) // the line's end: quiet counts from a frame after it
	if optedOut {
		// The table drops an opted-out player's audio unheard: the player
		// lets two seconds of silence pass and goes on.
		p.advance(optedOutSilence)
		select {
		case <-called: // the table heard it after all (the opt-out read was stale)
			return p.result(ctx, st, pl)
		default:
		}
		p.rec.expect(nil)
		return LineEvent{LineReport: table.LineReport{At: p.clk.Now(), SpeakerID: pl.ID, Speaker: pl.Name,
			Dropped: "the player opted out of recording"}, Said: st.Say}, nil
	}
	// Silence until the lane has ended the utterance: it measures the
	// silence after the last frame by the clock, and ends the utterance
	// on the first tick after Endpoint (and the lanes' TickSlack) of it.
	// Then speech-to-text takes it, in real time: scene time stands still
	// until it has (LineTimeout at most).
	p.advance(p.quiet())
	p.step(playback.FrameDuration) // the lanes' tick at the end of the quiet
	t := time.NewTimer(p.o.LineTimeout)
	defer t.Stop()
	select {
	case <-called:
		return p.result(ctx, st, pl)
	case <-ctx.Done():
		return LineEvent{}, ctx.Err()
	case <-t.C:
		return LineEvent{}, fmt.Errorf("line %d (%s: %q): the audio lanes heard no utterance within %s", st.line, pl.Name, st.Say, p.o.LineTimeout)
	}
}

// quiet is the silence after a line by which the lanes have ended its
// utterance: Endpoint, the ticks' slack, and a frame either side for the
// tick's rounding.
func (p *player) quiet() time.Duration {
	a := p.o.Settings.Audio
	endpoint, slack := a.Endpoint, a.TickSlack
	if endpoint <= 0 {
		endpoint = audio.DefaultEndpoint
	}
	if slack <= 0 {
		slack = audio.DefaultTickSlack
	}
	return endpoint + slack + 2*playback.FrameDuration
}

// optedOutSilence is the silence the player lets pass after an opted-out
// player's line, which the table drops unheard.
const optedOutSilence = 2 * time.Second

// result waits for the table's report of the line.
func (p *player) result(ctx context.Context, st Step, pl Player) (LineEvent, error) {
	t := time.NewTimer(p.o.LineTimeout)
	defer t.Stop()
	var first *table.LineReport
	var also []table.LineReport
	for {
		var r table.LineReport
		if len(p.early) > 0 {
			r, p.early = p.early[0], p.early[1:]
		} else {
			select {
			case r = <-p.reports:
			case <-t.C:
				return LineEvent{}, fmt.Errorf("line %d (%s: %q): the table did not finish it within %s", st.line, pl.Name, st.Say, p.o.LineTimeout)
			case <-ctx.Done():
				return LineEvent{}, ctx.Err()
			}
		}
		switch {
		case r.Late:
			// A name said alone before, answered alone.
			p.late = append(p.late, LineEvent{LineReport: r, Audio: p.keepReply(r)})
			continue
		case first == nil:
			first = &r
		default:
			also = append(also, r)
		}
		if r.More {
			continue
		}
		ev := LineEvent{LineReport: *first, Also: also, Said: st.Say, Spoken: st.Heard == nil}
		if frames := p.tr.take(); len(frames) > 0 && p.o.OutDir != "" && r.Reply != "" {
			p.replies++
			path, err := p.writeReply(frames, r.Addressee)
			if err != nil {
				return ev, err
			}
			ev.Audio = path
		}
		return ev, nil
	}
}

// keepReply writes a late reply's audio, when replies are written.
func (p *player) keepReply(r table.LineReport) string {
	frames := p.tr.take()
	if len(frames) == 0 || p.o.OutDir == "" || r.Reply == "" {
		return ""
	}
	p.replies++
	path, err := p.writeReply(frames, r.Addressee)
	if err != nil {
		p.o.Logger.Warn("writing a reply's audio", "err", err)
		return ""
	}
	return path
}

func (p *player) writeReply(frames [][]byte, npcID string) (string, error) {
	pcm, err := decodeFrames(frames)
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(p.o.OutDir, 0o755); err != nil {
		return "", err
	}
	path := filepath.Join(p.o.OutDir, fmt.Sprintf("%02d-%s.wav", p.replies, npcID))
	return path, os.WriteFile(path, audio.EncodeWAV(pcm), 0o644)
}

// frames are a line's Opus frames: its words synthesised in the player's
// voice, or, when the scene gives what speech-to-text hears, a voiced
// sound as long as the words would take.
func (p *player) frames(ctx context.Context, pl Player, st Step) ([][]byte, error) {
	if st.Heard != nil {
		return p.voicedFrames(heardLength(st))
	}
	pcm, err := p.speech(ctx, pl, st)
	if err != nil {
		return nil, err
	}
	enc, err := playback.NewEncoder(48000)
	if err != nil {
		return nil, err
	}
	return enc.Frames(pcm)
}

// heardLength is how long a line the scene gives heard text for sounds:
// 300 ms a word, 2 to 20 words; a whole number of Opus frames.
func heardLength(st Step) time.Duration {
	words := len(strings.Fields(st.Say))
	if words == 0 {
		words = len(strings.Fields(*st.Heard))
	}
	return time.Duration(min(max(words, 2), maxHeardWords)) * 300 * time.Millisecond
}

// maxHeardWords is the most words heardLength counts.
const maxHeardWords = 20

// voicedFrames are the Opus frames of voiced(d), d a whole number of
// frames. The encoder is causal (a frame depends on the samples before it
// only) and a line starts with a fresh one, so the frames of a shorter
// sound are the first frames of the longest: that one is encoded once a
// play and each line takes its prefix, instead of encoding every line's
// sound again.
func (p *player) voicedFrames(d time.Duration) ([][]byte, error) {
	if p.voiced == nil {
		enc, err := playback.NewEncoder(48000)
		if err != nil {
			return nil, err
		}
		if p.voiced, err = enc.Frames(voiced(maxHeardWords * 300 * time.Millisecond)); err != nil {
			return nil, err
		}
	}
	return p.voiced[:int(d/playback.FrameDuration)], nil
}

// speech is the audio of a line the scene gives no heard text for: its
// words synthesised in the player's voice.
func (p *player) speech(ctx context.Context, pl Player, st Step) (audio.PCM, error) {
	pcm, err := p.o.PlayerVoice.Synthesize(ctx, st.Say, tts.Voice{Name: pl.Voice})
	if errors.Is(err, tts.ErrBadVoice) && pl.Voice != "" {
		// A voice this machine lacks: the best one it has speaks instead.
		p.o.Logger.Warn("a player's voice is not installed; the default voice speaks", "player", pl.Name, "voice", pl.Voice)
		pcm, err = p.o.PlayerVoice.Synthesize(ctx, st.Say, tts.Voice{})
	}
	if err != nil {
		return audio.PCM{}, fmt.Errorf("line %d: speaking %s's line: %w", st.line, pl.Name, err)
	}
	return pcm, nil
}

// voiced is a vowel-like sound of length d at 48 kHz: a 140 Hz voice with
// its harmonics, rising and falling four times a second like syllables.
// The sound repeats every quarter second (140 Hz and 4 Hz are both
// multiples of 4 Hz), so one quarter second is computed and repeated: a
// long scene's lines cost a fraction of the sines.
func voiced(d time.Duration) audio.PCM {
	const (
		rate   = 48000
		period = rate / 4
	)
	n := int(d.Seconds() * rate)
	out := audio.PCM{Rate: rate, Samples: make([]int16, n)}
	for i := range out.Samples[:min(n, period)] {
		t := float64(i) / rate
		v := 0.0
		for h, a := range []float64{1, 0.6, 0.4, 0.25, 0.15} {
			v += a * math.Sin(2*math.Pi*140*float64(h+1)*t)
		}
		env := 0.55 + 0.45*math.Sin(2*math.Pi*4*t)
		out.Samples[i] = int16(v * env * 5000)
	}
	for i := period; i < n; i += period {
		copy(out.Samples[i:], out.Samples[:period])
	}
	return out
}

// unavailable is the recogniser of a scene without one: every line must
// give its heard text.
type unavailable struct{}

func (unavailable) Transcribe(context.Context, audio.PCM, stt.Hints) (stt.Transcript, error) {
	return stt.Transcript{}, errors.New("no speech-to-text engine: give heard: for every line")
}
