// Package reconnect keeps a connection alive: when its owner reports the
// connection lost, a [Reconnector] dials a new one with jittered
// exponential backoff and hands it over.
//
//	r, err := reconnect.New(reconnect.Config[*gateway.Conn]{
//		Dial:        func(ctx context.Context) (*gateway.Conn, error) { return gateway.Dial(ctx, addr) },
//		OnReconnect: func(c *gateway.Conn) { session.Resume(c) },
//		OnGiveUp:    func(err error) { go session.Fail(err) },
//	})
//	r.Use(firstConn)
//	r.Start(ctx)
//	defer r.Stop()
//	...
//	// the read loop of the connection, on a read error:
//	r.NotifyDisconnect()
//
// # Behaviour
//
// The loop sleeps until [Reconnector.NotifyDisconnect]; it never polls.
// Then it closes the lost connection and dials: the first attempt after
// Initial (1 s), each further one after twice the previous delay, capped at
// Max (30 s), every delay varied by ±Jitter (20 %) so that many clients do
// not retry in step, and never above Max. After MaxAttempts (10) failed
// dials in a row it calls OnGiveUp and waits for the next notification.
// Notifications that arrive while a reconnect is under way are merged into
// it. [Reconnector.Stop] interrupts a wait or a dial, stops the loop and
// closes the current connection.
//
// Time and randomness are injected ([Config].Clock, [Config].Rand) so that
// the schedule can be tested exactly.
package reconnect
