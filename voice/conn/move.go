package conn

import (
	"errors"
	"fmt"
	"time"

	"github.com/glyphoxa/glyphoxa/voice/gateway"
)

// DefaultMoveWait is how long a connection closed with 4014 or 4022 waits
// for the new voice session of a move (Switch) before it ends. discord.js
// tells bots to wait about five seconds for the same reason.
const DefaultMoveWait = 5 * time.Second

// ErrDisconnected: Discord took the bot out of the voice channel (kicked,
// disconnected by a moderator, the channel deleted or the call ended) and
// no new voice session followed. The connection has ended; the
// *DisconnectedError it is wrapped in says how.
var ErrDisconnected = errors.New("voice: disconnected from the voice channel")

// DisconnectedError is why a connection ended because Discord took the bot
// out of its channel. It unwraps to ErrDisconnected. Reason is a sentence
// a bot can post in the channel's text chat.
type DisconnectedError struct {
	// Code is the voice gateway's close code (4014 or 4022), or 0 when the
	// main gateway reported the bot in no channel (Conn.Removed).
	Code int
	// ChannelID is the channel the bot was in.
	ChannelID string
	// Reason says what happened, for people.
	Reason string
}

func (e *DisconnectedError) Error() string {
	if e.Code == 0 {
		return fmt.Sprintf("voice: %s", e.Reason)
	}
	return fmt.Sprintf("voice: %s (close code %d)", e.Reason, e.Code)
}

// Unwrap returns ErrDisconnected.
func (e *DisconnectedError) Unwrap() error { return ErrDisconnected }

// mover is one wait for the new voice session after a 4014 or 4022.
type mover struct {
	code    int
	channel string
	// claimed is closed when Switch or Removed took the wait over.
	claimed chan struct{}
}

// awaitMove reacts to 4014 or 4022: Discord sends a new voice server
// update when the bot was moved (or the guild's voice server changed), so
// the connection waits up to Config.MoveWait for Switch; without one it
// ends with a *DisconnectedError.
func (c *Conn) awaitMove(code int) {
	c.mu.Lock()
	if c.moving != nil {
		c.mu.Unlock()
		return
	}
	m := &mover{code: code, channel: c.params.ChannelID, claimed: make(chan struct{})}
	c.moving = m
	c.ready = false
	c.mu.Unlock()
	c.log.Info("voice gateway closed the session; waiting for a move", "code", code, "wait", c.cfg.MoveWait)
	c.emit(Event{Kind: EventWaitingForMove, ChannelID: m.channel, Err: fmt.Errorf("close code %d", code)})
	timer := c.cfg.Clock.NewTimer(c.cfg.MoveWait)
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		defer timer.Stop()
		select {
		case <-c.ctx.Done():
			return
		case <-m.claimed:
			return
		case <-timer.C():
		}
		c.mu.Lock()
		mine := c.moving == m
		if mine {
			c.moving = nil
		}
		c.mu.Unlock()
		if mine {
			go c.finish(&DisconnectedError{Code: m.code, ChannelID: m.channel, Reason: disconnectReason(m.code)})
		}
	}()
}

// claimMove ends a wait for a move, if one runs; it reports whether one
// did.
func (c *Conn) claimMove() bool {
	c.mu.Lock()
	m := c.moving
	c.moving = nil
	c.mu.Unlock()
	if m != nil {
		close(m.claimed)
	}
	return m != nil
}

func disconnectReason(code int) string {
	if code == gateway.CloseCallTerminated {
		return "the voice call ended (the channel was deleted or its voice server went away) and no new voice session followed"
	}
	return "removed from the voice channel (kicked or disconnected by a moderator) and not moved to another one"
}

// Removed tells the connection that the main gateway reports the bot in
// no voice channel (its VOICE_STATE_UPDATE has no channel): someone
// disconnected it, so no move will follow. The connection ends at once
// with a *DisconnectedError; reason, if not empty, replaces the default
// explanation. It does nothing after the end.
func (c *Conn) Removed(reason string) {
	if c.ctx.Err() != nil {
		return
	}
	c.claimMove()
	c.mu.Lock()
	ch := c.params.ChannelID
	c.mu.Unlock()
	if reason == "" {
		reason = "disconnected from the voice channel"
	}
	c.finish(&DisconnectedError{ChannelID: ch, Reason: reason})
}
