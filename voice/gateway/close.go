package gateway

import "fmt"

// CloseAction is what a client does when the voice gateway closes.
type CloseAction int

// Close actions.
const (
	// ActionResume: reconnect the WebSocket and resume the session.
	ActionResume CloseAction = iota
	// ActionReidentify: the session is gone; start a new one (new voice
	// state from the main gateway).
	ActionReidentify
	// ActionStop: do not reconnect (kicked, channel deleted, rate limited).
	ActionStop
	// ActionFatal: reconnecting cannot help; report the error.
	ActionFatal
)

func (a CloseAction) String() string {
	return [...]string{"resume", "re-identify", "stop", "fatal"}[a]
}

// Close codes of the voice gateway.
const (
	CloseUnknownOpcode      = 4001
	CloseDecodeError        = 4002
	CloseNotAuthenticated   = 4003
	CloseAuthFailed         = 4004
	CloseAlreadyAuth        = 4005
	CloseSessionInvalid     = 4006
	CloseSessionTimeout     = 4009
	CloseServerNotFound     = 4011
	CloseUnknownProtocol    = 4012
	CloseDisconnected       = 4014
	CloseServerCrashed      = 4015
	CloseUnknownEncryption  = 4016
	CloseE2EERequired       = 4017
	CloseBadRequest         = 4020
	CloseRateLimited        = 4021
	CloseCallTerminated     = 4022
	closeNormal             = 1000
	closeLastStandardCode   = 1015
	closeAbnormalNoCodeSent = 1006
)

// Classify says what to do after the gateway closed with code.
func Classify(code int) (CloseAction, string) {
	switch code {
	case CloseE2EERequired:
		return ActionFatal, "this channel requires end-to-end encryption (DAVE) and the client did not offer it"
	case CloseUnknownEncryption:
		return ActionFatal, "the voice server rejected the transport encryption mode"
	case CloseDisconnected:
		return ActionStop, "disconnected from the channel (kicked, moved, or the main gateway session dropped)"
	case CloseRateLimited:
		return ActionStop, "rate limited by Discord"
	case CloseCallTerminated:
		return ActionStop, "the call was terminated (channel deleted or voice server changed)"
	case CloseSessionInvalid, CloseSessionTimeout, CloseAuthFailed, CloseServerNotFound:
		return ActionReidentify, fmt.Sprintf("voice session ended (%d)", code)
	case CloseUnknownOpcode, CloseDecodeError, CloseNotAuthenticated, CloseAlreadyAuth, CloseUnknownProtocol, CloseBadRequest:
		return ActionReidentify, fmt.Sprintf("protocol error %d", code)
	case CloseServerCrashed:
		return ActionResume, "voice server crashed"
	}
	if code >= closeNormal && code <= closeLastStandardCode || code == 0 {
		return ActionResume, fmt.Sprintf("connection closed (%d)", code)
	}
	return ActionReidentify, fmt.Sprintf("unexpected close code %d", code)
}
