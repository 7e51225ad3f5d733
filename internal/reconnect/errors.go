package reconnect

import "errors"

// ErrGaveUp is wrapped by the error OnGiveUp receives.
var ErrGaveUp = errors.New("gave up reconnecting")

var errNoDial = errors.New("reconnect: Config.Dial is required")
