package dave

import (
	"log/slog"

	"github.com/glyphoxa/glyphoxa/voice/conn"
)

// NewE2EE returns a [conn.Config] NewE2EE function that gives every voice
// connection its own DAVE [Session], logging to logger (slog.Default when
// nil) with opts applied:
//
//	cfg := conn.Config{NewE2EE: dave.NewE2EE(logger)}
func NewE2EE(logger *slog.Logger, opts ...Option) func(userID, channelID uint64) (conn.E2EE, error) {
	if logger == nil {
		logger = slog.Default()
	}
	all := append([]Option{WithLogger(logger)}, opts...)
	return func(userID, channelID uint64) (conn.E2EE, error) {
		return NewSession(userID, channelID, all...)
	}
}
