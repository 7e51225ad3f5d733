package audio

import (
	"fmt"
	"time"

	"layeh.com/gopus"
)

// Lane turns one speaker's packets into utterances. Lanes are made by a
// [Router]; a Lane is not safe for concurrent use.
type Lane struct {
	user string
	cfg  *Config
	dec  *gopus.Decoder
	vad  *VAD

	started bool
	opening bool // the stream's first packets: its start is not fixed yet
	ssrc    uint32
	next    uint16             // next expected sequence number
	held    map[uint16]*Packet // packets waiting for a missing one
	lost    int                // packets skipped just before next
	arrived time.Time          // when the last packet arrived

	// Media time, in 16 kHz samples on an unwrapped RTP clock.
	rawTS      uint32 // last RTP timestamp seen
	extTS      int64  // its unwrapped value, at 48 kHz
	pos        int64  // position of the next sample to produce
	lastDur    int64  // duration of the last packet
	anchorPos  int64  // position mapped to anchorWall
	anchorWall time.Time
	lastEnd    int64     // end of the last packet
	lastWall   time.Time // its arrival

	pend    []int16 // samples not yet a whole frame
	pendPos int64

	// Endpointer.
	speaking   bool
	recent     [onsetSpan]bool
	recentN    int
	ring       []int16 // pre-roll while idle
	ringPos    int64   // position of ring[0]
	buf        []int16 // utterance audio
	bufPos     int64
	speechPos  int64 // start of speech
	lastVoiced int64 // end of the last voiced frame
	speechEnd  int64 // end of the last speech frame
	heldSent   bool
	concealed  int64 // concealed samples in the open utterance

	// Rate limit.
	rate     bucket
	rateSeen bool
	rateSSRC uint32
	rateEnd  uint32    // RTP time where the latest packet ended
	cut      int64     // 48 kHz samples cut from the stream (dropped packets)
	dropLog  time.Time // when drops were last logged
	drops    int       // drops since

	stats Stats
}

func newLane(user string, cfg *Config) (*Lane, error) {
	dec, err := gopus.NewDecoder(Rate, 1)
	if err != nil {
		return nil, fmt.Errorf("opus decoder for user %s: %w", user, err)
	}
	return &Lane{user: user, cfg: cfg, dec: dec, vad: NewVAD(), held: map[uint16]*Packet{},
		rate: newBucket(cfg.MaxRate, cfg.RateBurst)}, nil
}

// Stats returns what the lane has counted so far.
func (l *Lane) Stats() Stats { return l.stats }

// Speaking reports whether an utterance is open.
func (l *Lane) Speaking() bool { return l.speaking }

func samplesDur(n int64) time.Duration { return time.Duration(n) * time.Second / Rate }
func durSamples(d time.Duration) int64 { return int64(d) * Rate / int64(time.Second) }

func (l *Lane) wall(pos int64) time.Time {
	return l.anchorWall.Add(samplesDur(pos - l.anchorPos))
}

// A lane restarts its stream, rather than dropping the rest of it as late
// or waiting for packets that will never come, when:
//
//   - the SSRC changes (the speaker's client restarted its stream);
//   - the sequence number is more than maxJump from the expected one,
//     either way (the sender restarted its numbering);
//   - the sequence number is lower than expected after the lane was idle
//     restartGap (an SSRC reused by a reconnected client).
//
// A restart reports no loss. Its first packets wait for up to startWindow
// packets (or the reorder delay) before the lowest is taken as the start,
// so a packet or two reordered at the start of a stream are not late.
const (
	// maxJump is the largest sequence step taken as the same stream:
	// 1000 packets, 20 s of 20 ms frames.
	maxJump = 1000
	// restartGap is how long a lane must have been idle for a lower
	// sequence number to start a new stream.
	restartGap = time.Second
	// startWindow is how many packets the start of a stream waits for.
	startWindow = 3
)

// push takes the next packet of the speaker. A packet that cannot be decoded
// is concealed as lost and reported; the lane carries on.
func (l *Lane) push(p Packet) error {
	if !l.started || p.SSRC != l.ssrc {
		l.restart(p)
	}
	d := int16(p.Sequence - l.next)
	if l.opening && d < 0 && int(d) >= -max(l.cfg.ReorderWindow, startWindow) {
		// Earlier than what came first, at the very start: the stream
		// starts here, its clock anchored on this packet.
		held := l.held
		l.held = map[uint16]*Packet{}
		l.restart(p)
		l.held = held
		d = 0
	}
	idle := !l.arrived.IsZero() && p.Received.Sub(l.arrived) >= restartGap
	l.arrived = p.Received
	if d < 0 {
		if d < -maxJump || idle { // the sender restarted its numbering
			l.restart(p)
		} else {
			l.stats.Late++
			return nil
		}
	} else if d > maxJump {
		l.restart(p)
	} else if p.Lost > 0 && int(d) == p.Lost && len(l.held) == 0 {
		// The transport gave up on the packets in between.
		l.lost += p.Lost
		l.stats.Lost += p.Lost
		l.next = p.Sequence
	}
	if _, dup := l.held[p.Sequence]; !dup {
		cp := p
		l.held[p.Sequence] = &cp
	}
	if l.opening {
		if len(l.held) < startWindow {
			return nil
		}
		l.opening = false
	}
	err := l.drain()
	if len(l.held) > l.cfg.ReorderWindow {
		if e := l.skip(); err == nil {
			err = e
		}
	}
	return err
}

// stale reports whether push would drop p unprocessed: a copy of a packet
// waiting for a missing one, or an earlier one than the stream expects
// that starts no new stream (late, or a duplicate of one processed).
func (l *Lane) stale(p Packet) bool {
	if !l.started || p.SSRC != l.ssrc {
		return false
	}
	if _, dup := l.held[p.Sequence]; dup {
		return true
	}
	d := int16(p.Sequence - l.next)
	if d >= 0 || l.opening && int(d) >= -max(l.cfg.ReorderWindow, startWindow) {
		return false
	}
	idle := !l.arrived.IsZero() && p.Received.Sub(l.arrived) >= restartGap
	return d >= -maxJump && !idle
}

// rateCost is what p, of n48 samples at 48 kHz, costs against the rate
// limit: its own duration and the gap before it that the lane would fill
// with concealment and silence (a sender cannot make audio out of gaps in
// its timestamps for free). A gap longer than the lane fills costs what
// the lane fills.
func (l *Lane) rateCost(p Packet, n48 int) int {
	gap := 0
	if l.rateSeen && p.SSRC == l.rateSSRC {
		gap = max(int(int32(p.Timestamp-l.rateEnd)), 0)
	}
	fill := l.cfg.MaxConceal + l.cfg.PreRoll + onsetSpan*20*time.Millisecond
	if l.speaking {
		fill = l.cfg.MaxConceal + l.cfg.Endpoint + 2*20*time.Millisecond
	}
	gap = min(gap, 3*int(durSamples(fill)))
	end := p.Timestamp + uint32(n48)
	if !l.rateSeen || p.SSRC != l.rateSSRC || int32(end-l.rateEnd) > 0 {
		l.rateEnd = end
	}
	l.rateSeen, l.rateSSRC = true, p.SSRC
	return n48 + gap
}

// restart forgets the stream (a new SSRC or sequence space), closing any
// open utterance.
func (l *Lane) restart(p Packet) {
	if l.started && l.speaking {
		l.finish(l.speechEnd, false)
	}
	l.started, l.opening = true, true
	l.ssrc = p.SSRC
	l.next = p.Sequence
	clear(l.held)
	l.lost = 0
	l.rawTS = p.Timestamp
	l.cut = 0
	l.extTS = 0
	l.pos = 0
	l.pend = l.pend[:0]
	l.pendPos = 0
	l.ring = l.ring[:0]
	l.ringPos = 0
	l.recentN = 0
	l.lastDur = 320
	n, err := PacketSamples(p.Opus)
	if err != nil {
		n = 960
	}
	l.anchorPos = int64(n / 3)
	l.anchorWall = p.Received
	l.lastEnd = l.anchorPos
	l.lastWall = p.Received
	l.dec.ResetState()
}

// drain processes the packets that are now in order.
func (l *Lane) drain() error {
	var first error
	for {
		p, ok := l.held[l.next]
		if !ok {
			return first
		}
		delete(l.held, l.next)
		if err := l.process(p, l.lost); err != nil && first == nil {
			first = err
		}
		l.lost = 0
		l.next++
	}
}

// skip gives up on the missing packet(s) before the oldest held one.
func (l *Lane) skip() error {
	l.opening = false
	if len(l.held) == 0 {
		return nil
	}
	best := int16(32767)
	for s := range l.held {
		if d := int16(s - l.next); d < best {
			best = d
		}
	}
	l.lost += int(best)
	l.stats.Lost += int(best)
	l.next += uint16(best)
	return l.drain()
}

// process decodes one in-order packet, first filling the gap before it:
// concealment for lost packets, silence for a pause in the stream.
func (l *Lane) process(p *Packet, lost int) error {
	ts := p.Timestamp - uint32(l.cut) // the stream without the packets cut from it
	l.extTS += int64(int32(ts - l.rawTS))
	l.rawTS = ts
	if p.cut {
		// Dropped by the rate limit: the next packet starts where this
		// one would have.
		n48, err := PacketSamples(p.Opus)
		if err != nil {
			n48 = int(l.lastDur * 3)
		}
		// The gap before it goes too: nothing fills it.
		l.cut += int64(n48) + 3*max(l.extTS/3-l.pos, 0)
		return nil
	}
	start := l.extTS / 3
	var decodeErr error
	n48, err := PacketSamples(p.Opus)
	if err != nil {
		decodeErr = fmt.Errorf("user %s packet %d: %w", l.user, p.Sequence, err)
		n48 = int(l.lastDur * 3)
		lost++ // conceal it like a lost one
		start = l.pos
	}
	dur := int64(n48 / 3)

	if gap := start - l.pos; gap > 0 {
		conceal := min(gap, int64(lost)*l.lastDur, durSamples(l.cfg.MaxConceal))
		if conceal > 0 && decodeErr == nil {
			// The lost audio just before p: packet-loss concealment, with
			// in-band FEC from p for its last 20 ms where p carries it.
			if conceal > FrameSamples {
				l.conceal(conceal-FrameSamples, nil)
			}
			l.conceal(min(conceal, FrameSamples), p.Opus)
		} else if conceal > 0 {
			l.conceal(conceal, nil)
		}
		l.silence(gap - conceal)
	}
	// A packet overlapping audio already taken as silence keeps only its
	// new part (emitAt drops the rest).
	if decodeErr != nil {
		l.stats.Bad++
		l.conceal(dur, nil)
		l.mark(p, dur)
		return decodeErr
	}
	if IsSilenceFrame(p.Opus) {
		l.stats.Silence++
		l.emitAt(start, make([]int16, dur))
		l.mark(p, dur)
		return nil
	}
	pcm, err := l.dec.Decode(p.Opus, int(dur), false)
	if err != nil {
		l.stats.Bad++
		l.conceal(dur, nil)
		l.mark(p, dur)
		return fmt.Errorf("user %s packet %d: %w: %w", l.user, p.Sequence, errBadPacket, err)
	}
	l.stats.Packets++
	l.emitAt(start, pcm)
	l.lastDur = int64(len(pcm))
	l.mark(p, int64(len(pcm)))
	return nil
}

// mark records where packet p ended and when it arrived. A packet that
// arrives before the time its media position maps to moves the anchor to
// it: the media clock follows the earliest arrivals, so a first packet
// that came (or was read) late cannot put the times of everything after it,
// an utterance's End among them, ahead of when its packets arrived.
func (l *Lane) mark(p *Packet, dur int64) {
	if end := l.extTS/3 + dur; !p.Received.IsZero() && p.Received.Before(l.wall(end)) {
		l.anchorPos, l.anchorWall = end, p.Received
	}
	if end := l.extTS/3 + dur; end > l.lastEnd || p.Received.After(l.lastWall) {
		l.lastEnd = l.extTS/3 + dur
		l.lastWall = p.Received
	}
}

// conceal produces n samples by packet-loss concealment (or FEC from next).
func (l *Lane) conceal(n int64, next []byte) {
	l.stats.Concealed += samplesDur(n)
	for n > 0 {
		step := min(n, FrameSamples)
		pcm, err := l.dec.Decode(next, int(step), next != nil)
		if err != nil || int64(len(pcm)) != step {
			pcm = make([]int16, step)
		}
		if l.speaking {
			l.concealed += step
		}
		l.emitAt(l.pos, pcm)
		n -= step
		next = nil
	}
}

// silence produces n samples of silence. Long silences are not analysed
// sample by sample: while nobody speaks only enough to refill the pre-roll
// is fed, and during an utterance only enough to close it; the rest is
// skipped.
func (l *Lane) silence(n int64) {
	if n <= 0 {
		return
	}
	need := durSamples(l.cfg.PreRoll) + FrameSamples*onsetSpan
	if l.speaking {
		need = durSamples(l.cfg.Endpoint) + 2*FrameSamples
	}
	if n <= need {
		l.emitAt(l.pos, make([]int16, n))
		return
	}
	if l.speaking {
		l.emitAt(l.pos, make([]int16, need))
		n -= need
		if l.speaking { // still open (cannot happen with Endpoint of silence)
			l.finish(l.speechEnd, false)
		}
		l.jump(n)
		return
	}
	l.jump(n - need)
	l.emitAt(l.pos, make([]int16, need))
}

// jump skips n samples while idle, forgetting the partial frame, the
// pre-roll and the onset history, which would no longer be contiguous.
func (l *Lane) jump(n int64) {
	l.pos += n
	l.pend = l.pend[:0]
	l.ring = l.ring[:0]
	l.recentN = 0
}

// emitAt feeds samples that start at position at; samples before the
// current position (already filled with silence) are dropped.
func (l *Lane) emitAt(at int64, pcm []int16) {
	if at < l.pos {
		skip := l.pos - at
		if skip >= int64(len(pcm)) {
			return
		}
		pcm = pcm[skip:]
	} else if at > l.pos {
		l.silence(at - l.pos)
	}
	l.stats.Decoded += samplesDur(int64(len(pcm)))
	if len(l.pend) == 0 {
		l.pendPos = l.pos
	}
	l.pos += int64(len(pcm))
	l.pend = append(l.pend, pcm...)
	i := 0
	for ; i+FrameSamples <= len(l.pend); i += FrameSamples {
		l.frame(l.pend[i:i+FrameSamples], l.pendPos+int64(i))
	}
	l.pendPos += int64(i)
	l.pend = append(l.pend[:0], l.pend[i:]...)
}

// tick fills the time since the last packet with silence once it is later
// than TickSlack, so that a speaker who stopped sending is endpointed.
func (l *Lane) tick(now time.Time) error {
	if !l.started {
		return nil
	}
	var err error
	if len(l.held) > 0 {
		oldest := now
		for _, p := range l.held {
			if p.Received.Before(oldest) {
				oldest = p.Received
			}
		}
		if now.Sub(oldest) >= l.cfg.ReorderDelay {
			err = l.skip()
		}
	}
	if !l.speaking {
		return err
	}
	expect := l.lastEnd + durSamples(now.Sub(l.lastWall)-l.cfg.TickSlack)
	if expect > l.pos {
		n := (expect - l.pos) / FrameSamples * FrameSamples
		if n > 0 {
			l.emitAt(l.pos, make([]int16, n))
		}
	}
	return err
}

// frame runs the detector and the endpointer on one 20 ms frame at pos.
func (l *Lane) frame(f []int16, pos int64) {
	voiced, active := l.vad.Frame(f)
	end := pos + FrameSamples
	if !l.speaking {
		l.ring = append(l.ring, f...)
		if len(l.ring) == FrameSamples {
			l.ringPos = pos
		}
		keep := int(durSamples(l.cfg.PreRoll)) + FrameSamples*onsetSpan
		if over := len(l.ring) - keep; over > 0 {
			l.ring = append(l.ring[:0], l.ring[over:]...)
			l.ringPos += int64(over)
		}
		copy(l.recent[:], l.recent[1:])
		l.recent[onsetSpan-1] = voiced
		l.recentN = min(l.recentN+1, onsetSpan)
		count, first := 0, -1
		for i := onsetSpan - l.recentN; i < onsetSpan; i++ {
			if l.recent[i] {
				count++
				if first < 0 {
					first = i
				}
			}
		}
		if !voiced || count < l.cfg.OnsetFrames {
			return
		}
		l.speaking = true
		l.heldSent = false
		l.speechPos = end - int64(onsetSpan-first)*FrameSamples
		from := max(l.ringPos, l.speechPos-durSamples(l.cfg.PreRoll))
		l.bufPos = from
		l.buf = append(l.buf[:0], l.ring[from-l.ringPos:]...)
		l.ring = l.ring[:0]
		l.lastVoiced, l.speechEnd = end, end
		l.concealed = 0
		l.recentN = 0
		l.event(SpeechStarted, l.speechPos)
		l.audio(true, l.buf)
		return
	}
	l.buf = append(l.buf, f...)
	l.audio(false, f)
	if voiced {
		l.lastVoiced, l.speechEnd = end, end
	} else if active && pos-l.lastVoiced < durSamples(150*time.Millisecond) {
		l.speechEnd = end
	}
	if !l.heldSent && l.speechEnd-l.speechPos >= durSamples(l.cfg.HoldAfter) {
		l.heldSent = true
		l.event(SpeechHeld, l.speechEnd)
	}
	switch {
	case end-l.speechEnd >= durSamples(l.cfg.Endpoint):
		l.finish(l.speechEnd, false)
	case end-l.speechPos >= durSamples(l.cfg.MaxUtterance):
		l.finish(end, true)
		// The speaker is still talking: the next utterance starts here.
		l.speaking, l.heldSent = true, true
		l.speechPos, l.bufPos, l.lastVoiced, l.speechEnd = end, end, end, end
		l.buf = l.buf[:0]
		l.concealed = 0
		l.event(SpeechStarted, l.speechPos)
		l.audio(true, nil)
	}
}

func (l *Lane) audio(start bool, pcm []int16) {
	if l.cfg.OnAudio != nil {
		l.cfg.OnAudio(Chunk{UserID: l.user, Start: start, Samples: pcm})
	}
}

// finish closes the open utterance with speech ending at end.
func (l *Lane) finish(end int64, truncated bool) {
	l.speaking = false
	stop := min(end+durSamples(l.cfg.PostRoll), l.bufPos+int64(len(l.buf)))
	audio := make([]int16, max(stop-l.bufPos, 0))
	copy(audio, l.buf)
	l.buf = l.buf[:0]
	l.event(SpeechEnded, end)
	if l.cfg.OnUtterance != nil {
		l.cfg.OnUtterance(Utterance{
			UserID: l.user, Start: l.wall(l.speechPos), End: l.wall(end),
			Audio: PCM{Rate: Rate, Samples: audio}, AudioStart: l.wall(l.bufPos),
			Truncated: truncated, Concealed: samplesDur(l.concealed),
		})
	}
}

func (l *Lane) event(k EventKind, pos int64) {
	if l.cfg.OnEvent != nil {
		l.cfg.OnEvent(Event{Kind: k, UserID: l.user, At: l.wall(pos)})
	}
}

// close ends an open utterance at its last speech.
func (l *Lane) close() {
	if l.speaking {
		l.finish(l.speechEnd, false)
	}
}
