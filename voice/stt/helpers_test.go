package stt_test

import (
	"context"
	"errors"
	"net"

	"github.com/gorilla/websocket"
)

// brokenDialer fails every WebSocket dial, as a proxy that blocks
// WebSockets would.
func brokenDialer() *websocket.Dialer {
	return &websocket.Dialer{NetDialContext: func(context.Context, string, string) (net.Conn, error) {
		return nil, errors.New("websockets blocked")
	}}
}
