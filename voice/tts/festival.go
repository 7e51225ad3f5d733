package tts

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/glyphoxa/glyphoxa/voice/audio"
	"github.com/glyphoxa/glyphoxa/voice/provider"
)

// Festival voices Debian packages for US English.
const (
	// FestivalSLT is festvox-us-slt-hts: a female US English HTS voice,
	// 32 kHz; of the local voices, the one speech-to-text hears best.
	FestivalSLT = "cmu_us_slt_arctic_hts"
	// FestivalKAL is festvox-kallpc16k: a male US English diphone voice.
	FestivalKAL = "kal_diphone"
	// FestivalKED is festvox-kdlpc16k: another male US English diphone
	// voice.
	FestivalKED = "ked_diphone"
)

// DefaultFestivalVoices is where Debian installs festival's voices.
const DefaultFestivalVoices = "/usr/share/festival/voices"

// DefaultFestivalIdle is how long [Festival] keeps festival running
// without a sentence to speak: long enough that the NPCs of a session in
// play rarely wait for it to start again.
const DefaultFestivalIdle = 15 * time.Minute

// voiceName is what a festival or flite voice name may look like: it is
// put into a Scheme expression, so nothing else is accepted.
var voiceName = regexp.MustCompile(`^[a-z0-9_]{1,64}$`)

// Festival synthesises with the festival speech synthesis system. It keeps
// one festival running (festival --pipe) from its first sentence until it
// has had nothing to say for Idle, or until Close: festival takes more than
// a second of CPU to start (it loads its lexicons; a voice then loads once),
// after which a sentence takes 60-70 ms with a diphone voice and about
// 160 ms with the HTS voice (2 cores). The price is memory: a running
// festival holds about 330 MB. Sentences are spoken one at a time, in any
// voice. It is safe for concurrent use; its zero value is ready, with
// festival on $PATH.
//
// If festival dies (it crashes on some input), the sentence fails with an
// error and the next one starts a new festival.
type Festival struct {
	// Path is festival's path (festival on $PATH when empty).
	Path string
	// Idle is how long festival is kept without a sentence
	// (DefaultFestivalIdle when 0).
	Idle time.Duration
	// CancelGrace is how long a sentence whose caller gave up may still
	// take before festival is taken for hung and killed
	// (DefaultFestivalCancelGrace when 0). Raise it on a machine where a
	// long sentence takes longer to speak: a festival killed there costs
	// the next sentence a new one.
	CancelGrace time.Duration

	// turn is held by the one sentence being spoken, and by Close; it is
	// a channel so that a sentence's context can give up waiting for it.
	turnOnce sync.Once
	turn     chan struct{}
	mu       sync.Mutex // guards proc, idle, closed
	proc     *festivalProc
	idle     *time.Timer
	closed   bool
}

var _ Synthesizer = (*Festival)(nil)

// ErrClosed is returned by a synthesiser used after Close.
var ErrClosed = errors.New("speech synthesis closed")

// Synthesize speaks text with the festival voice v names (FestivalSLT when
// empty). Speed scales the voice's own pace (0 or 1: as the voice speaks).
func (f *Festival) Synthesize(ctx context.Context, text string, v Voice) (audio.PCM, error) {
	text = strings.TrimSpace(text)
	if text == "" {
		return audio.PCM{}, ErrNoText
	}
	name := v.Name
	if name == "" {
		name = FestivalSLT
	}
	if !voiceName.MatchString(name) {
		return audio.PCM{}, &provider.Error{Provider: "festival", Op: "choose voice", Err: fmt.Errorf("%w: %q is not a festival voice name", ErrBadVoice, name)}
	}
	if !sayable(text) {
		// Festival crashes on text without a letter or digit it can
		// pronounce ("...", "Ω", "é."): not sent to it.
		return audio.PCM{}, &provider.Error{Provider: "festival", Op: "read text", Err: fmt.Errorf("%q has no letter or digit festival can pronounce", snippet([]byte(text)))}
	}
	select {
	case f.turns() <- struct{}{}:
	case <-ctx.Done():
		return audio.PCM{}, ctx.Err()
	}
	defer func() { <-f.turn }()
	if err := ctx.Err(); err != nil {
		return audio.PCM{}, err
	}
	p, err := f.running()
	if err != nil {
		return audio.PCM{}, err
	}
	stretch := 1.0
	if v.Speed > 0 {
		stretch = 1 / v.Speed // Duration_Stretch > 1 is slower speech
	}
	grace := f.CancelGrace
	if grace <= 0 {
		grace = DefaultFestivalCancelGrace
	}
	pcm, err := p.say(ctx, text, name, stretch, grace)
	if err == nil && ctx.Err() != nil {
		pcm, err = audio.PCM{}, ctx.Err() // spoken for a caller who gave up
	}
	if err != nil && p.broken() {
		f.mu.Lock()
		if f.proc == p {
			f.proc = nil
		}
		f.mu.Unlock()
		p.stop()
	}
	f.rest()
	return pcm, err
}

// running returns festival, started if it is not running. The caller
// holds the turn.
func (f *Festival) running() (*festivalProc, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return nil, &provider.Error{Provider: "festival", Op: "run", Err: ErrClosed}
	}
	if f.idle != nil {
		f.idle.Stop()
	}
	if f.proc != nil {
		return f.proc, nil
	}
	path := f.Path
	if path == "" {
		path = "festival"
	}
	p, err := startFestival(path)
	if err != nil {
		return nil, err
	}
	f.proc = p
	return p, nil
}

// rest starts the idle timer after a sentence: festival is stopped when no
// sentence follows within Idle.
func (f *Festival) rest() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.proc == nil || f.closed {
		return
	}
	idle := f.Idle
	if idle <= 0 {
		idle = DefaultFestivalIdle
	}
	p := f.proc
	if f.idle != nil {
		f.idle.Stop()
	}
	f.idle = time.AfterFunc(idle, func() {
		// Not while a sentence is spoken (or this one's turn is not yet
		// given back): the timer starts again.
		select {
		case f.turn <- struct{}{}:
		default:
			f.rest()
			return
		}
		defer func() { <-f.turn }()
		f.mu.Lock()
		if f.proc != p {
			f.mu.Unlock()
			return
		}
		f.proc = nil
		f.mu.Unlock()
		p.stop()
	})
}

// Close stops festival, at once: a sentence being spoken fails with an
// error, and later ones with an error wrapping [ErrClosed]. It returns when
// festival has exited.
func (f *Festival) Close() error {
	f.mu.Lock()
	if f.closed {
		f.mu.Unlock()
		return nil
	}
	f.closed = true
	if f.idle != nil {
		f.idle.Stop()
	}
	p := f.proc
	f.proc = nil
	f.mu.Unlock()
	if p != nil {
		p.kill()
	}
	// Whoever holds the turn (a sentence, or the idle timer stopping
	// festival) is done with it when Close has it.
	f.turns() <- struct{}{}
	<-f.turn
	if p != nil {
		p.stop()
	}
	return nil
}

// turns is the turn's channel, made on first use (the zero Festival is
// ready).
func (f *Festival) turns() chan struct{} {
	f.turnOnce.Do(func() { f.turn = make(chan struct{}, 1) })
	return f.turn
}

// sayable reports whether text has an ASCII letter or digit: festival's
// English front end pronounces those, and crashes on text without any.
func sayable(text string) bool {
	for _, r := range text {
		if r < 0x80 && (r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9') {
			return true
		}
	}
	return false
}

// festivalProc is one running festival, reading Scheme on its standard
// input. Only the holder of its Festival's turn uses it.
type festivalProc struct {
	cmd     *exec.Cmd
	in      io.WriteCloser
	out     *bufio.Reader
	errs    *tailBuffer
	dir     string // holds the sentence's text and WAV files
	seq     int
	voice   string      // the voice selected last
	pace    float64     // its Duration_Stretch
	defined bool        // sayScheme has been sent
	failed  atomic.Bool // festival died, or was killed
	once    sync.Once
}

// startFestival starts festival in pipe mode (it reads Scheme on its
// standard input; the first exchange waits for it to be ready).
func startFestival(path string) (*festivalProc, error) {
	dir, err := os.MkdirTemp("", "glyphoxa-festival-")
	if err != nil {
		return nil, &provider.Error{Provider: "festival", Op: "run", Err: err}
	}
	cmd := exec.Command(path, "--pipe")
	cmd.Env = append(os.Environ(), "LC_ALL=C")
	cmd.Dir = dir
	p := &festivalProc{cmd: cmd, errs: &tailBuffer{max: 8 << 10}, dir: dir}
	cmd.Stderr = p.errs
	if p.in, err = cmd.StdinPipe(); err != nil {
		os.RemoveAll(dir)
		return nil, &provider.Error{Provider: "festival", Op: "run", Err: err}
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		os.RemoveAll(dir)
		return nil, &provider.Error{Provider: "festival", Op: "run", Err: err}
	}
	p.out = bufio.NewReader(out)
	if err := cmd.Start(); err != nil {
		os.RemoveAll(dir)
		return nil, &provider.Error{Provider: "festival", Op: "run", Err: err}
	}
	return p, nil
}

// say synthesises one sentence in voice, its durations stretched by
// stretch beyond the voice's own pace.
func (p *festivalProc) say(ctx context.Context, text, voice string, stretch float64, grace time.Duration) (audio.PCM, error) {
	defer p.watch(ctx, grace)()
	if p.voice != voice {
		// A voice loads once; selecting it again is free. current-voice
		// names the voice in force: an unknown voice leaves the last one
		// (and festival says why on its standard error). A voice sets
		// its own Duration_Stretch (1.1 for the diphone voices, 1 for
		// HTS): its pace, which Speed scales.
		mark := p.errs.len()
		got, err := p.do("(voice_" + voice + ")\n(format t \"%s %l\\n\" current-voice (Parameter.get (quote Duration_Stretch)))\n")
		if err != nil {
			return audio.PCM{}, p.fail(ctx, "choose voice", err)
		}
		name, pace, _ := strings.Cut(got, " ")
		if name != voice {
			return audio.PCM{}, &provider.Error{Provider: "festival", Op: "voice " + voice, Body: p.errs.since(mark), Err: ErrBadVoice}
		}
		p.voice, p.pace = voice, 1
		if f, err := strconv.ParseFloat(pace, 64); err == nil && f > 0 {
			p.pace = f
		}
	}
	// The text goes in a file, read by festival's text mode as text2wave
	// reads its input: split into utterances at sentence ends, each
	// synthesised and the waves joined (sayScheme). It never becomes
	// Scheme.
	in, wav := filepath.Join(p.dir, "sentence.txt"), filepath.Join(p.dir, "sentence.wav")
	if err := os.Remove(wav); err != nil && !errors.Is(err, os.ErrNotExist) {
		return audio.PCM{}, &provider.Error{Provider: "festival", Op: "run", Err: err}
	}
	if err := os.WriteFile(in, []byte(text+"\n"), 0o600); err != nil {
		return audio.PCM{}, &provider.Error{Provider: "festival", Op: "run", Err: err}
	}
	defer os.Remove(in)
	mark := p.errs.len()
	commands := "(Parameter.set (quote Duration_Stretch) " + strconv.FormatFloat(p.pace*stretch, 'f', 4, 64) + ")\n" +
		"(glyphoxa_say " + schemeString(in) + " " + schemeString(wav) + ")\n"
	if !p.defined {
		commands = sayScheme + commands
	}
	_, err := p.do(commands)
	if err != nil {
		return audio.PCM{}, p.fail(ctx, "run", err)
	}
	p.defined = true
	data, err := os.ReadFile(wav)
	os.Remove(wav) // nothing said is left behind, even if this process is killed
	if err != nil {
		// Festival reported an error of its own (SIOD ERROR …) and
		// went on with the next command.
		return audio.PCM{}, &provider.Error{Provider: "festival", Op: "run", Body: p.errs.since(mark), Err: errors.New("festival wrote no speech")}
	}
	pcm, err := audio.DecodeWAV(data)
	if err != nil {
		return audio.PCM{}, &provider.Error{Provider: "festival", Op: "decode output", Body: p.errs.since(mark), Err: err}
	}
	if len(pcm.Samples) == 0 {
		return audio.PCM{}, &provider.Error{Provider: "festival", Op: "run", Body: p.errs.since(mark), Err: ErrNoText}
	}
	return pcm, nil
}

// sayScheme defines glyphoxa_say, text2wave's synthesis (its tts_hooks
// and save_record_wave_fp) as a function: file in is read in festival's
// text mode, each utterance synthesised, and their waves written one
// after another to the RIFF file out, its header rewritten with the total
// at the end. A text of no utterance leaves out empty.
const sayScheme = `(define (glyphoxa_save utt)
  (if (eq? glyphoxa_samples 0)
      (wave.save.header glyphoxa_fp (utt.wave utt) 'riff nil (list (list "numsamples" 0))))
  (set! glyphoxa_samples (+ glyphoxa_samples (get_param 'num_samples (wave.info (utt.wave utt)) 0)))
  (wave.save.data.fp (utt.wave utt) glyphoxa_fp 'riff nil)
  (set! glyphoxa_utt utt))
(define (glyphoxa_say in out)
  (set! glyphoxa_fp (fopen out "wb"))
  (set! glyphoxa_samples 0)
  (set! glyphoxa_utt nil)
  (set! tts_hooks (list utt.synth glyphoxa_save))
  (tts_file in (tts_find_text_mode in auto-text-mode-alist))
  (if glyphoxa_utt
      (begin
        (fseek glyphoxa_fp 0 0)
        (wave.save.header glyphoxa_fp (utt.wave glyphoxa_utt) 'riff nil (list (list "numsamples" glyphoxa_samples)))))
  (fclose glyphoxa_fp))
`

// DefaultFestivalCancelGrace is how long a sentence whose caller gave up
// may still take before festival is killed ([Festival.CancelGrace]): a
// sentence takes well under a second, and a new festival more than one to
// start.
const DefaultFestivalCancelGrace = 5 * time.Second

// watch kills festival if ctx ends and the exchange has not ended grace
// later (festival hangs); the sentence under way is
// otherwise finished, its speech discarded, so that a caller who gives up
// (a player talking over an NPC) does not cost the next sentence a new
// festival. Calling the function it returns ends the watch.
func (p *festivalProc) watch(ctx context.Context, grace time.Duration) (end func()) {
	var mu sync.Mutex
	var kill *time.Timer
	ended := false
	stop := context.AfterFunc(ctx, func() {
		mu.Lock()
		defer mu.Unlock()
		if !ended {
			kill = time.AfterFunc(grace, p.kill)
		}
	})
	return func() {
		stop()
		mu.Lock()
		defer mu.Unlock()
		ended = true
		if kill != nil {
			kill.Stop()
		}
	}
}

// do sends commands, which print one line last, and returns that line.
// Each exchange ends with a numbered marker line, so that anything else
// festival prints is skipped.
func (p *festivalProc) do(commands string) (string, error) {
	p.seq++
	marker := "glyphoxa " + strconv.Itoa(p.seq)
	if _, err := io.WriteString(p.in, commands+"(format t \"%s\\n\" \""+marker+"\")\n(fflush nil)\n"); err != nil {
		p.failed.Store(true)
		return "", err
	}
	var last string
	for {
		line, err := p.out.ReadString('\n')
		if err != nil {
			p.failed.Store(true)
			if err == io.EOF {
				err = errors.New("festival exited")
			}
			return "", err
		}
		line = strings.TrimRight(line, "\r\n")
		if line == marker {
			return last, nil
		}
		last = line
	}
}

// fail is the error of an exchange that festival did not finish.
func (p *festivalProc) fail(ctx context.Context, op string, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	p.stop() // reaps festival, for its exit status
	if st := p.cmd.ProcessState; st != nil {
		err = fmt.Errorf("%w (%s)", err, st)
	}
	return &provider.Error{Provider: "festival", Op: op, Body: p.errs.since(0), Err: err}
}

// broken reports whether festival can no longer be used.
func (p *festivalProc) broken() bool { return p.failed.Load() }

// kill ends festival at once; the sentence being spoken fails. It may be
// called from any goroutine.
func (p *festivalProc) kill() {
	p.failed.Store(true)
	_ = p.cmd.Process.Kill()
}

// stop ends festival (closing its input lets it exit; it is killed if it
// has not) and removes its files. It is idempotent.
func (p *festivalProc) stop() {
	p.once.Do(func() {
		p.in.Close()
		t := time.AfterFunc(5*time.Second, func() { _ = p.cmd.Process.Kill() })
		_ = p.cmd.Wait()
		t.Stop()
		os.RemoveAll(p.dir)
	})
}

// schemeString quotes s as a Scheme string literal for festival's reader:
// backslashes and double quotes escaped, control characters (line breaks
// among them) made spaces. Nothing in it can end the string.
func schemeString(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r < 0x20 || r == 0x7f:
			b.WriteByte(' ')
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// tailBuffer keeps the last max bytes written to it (festival's standard
// error) and counts all of them.
type tailBuffer struct {
	mu    sync.Mutex
	max   int
	buf   []byte
	total int
}

func (t *tailBuffer) Write(b []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.total += len(b)
	t.buf = append(t.buf, b...)
	if len(t.buf) > t.max {
		t.buf = append(t.buf[:0], t.buf[len(t.buf)-t.max:]...)
	}
	return len(b), nil
}

// len is how many bytes have been written.
func (t *tailBuffer) len() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.total
}

// since is a snippet of what was written after the first n bytes (as far
// as it is kept).
func (t *tailBuffer) since(n int) string {
	t.mu.Lock()
	defer t.mu.Unlock()
	kept := t.total - len(t.buf) // bytes dropped from the front
	from := max(n-kept, 0)
	return snippet(bytes.Clone(t.buf[from:]))
}
