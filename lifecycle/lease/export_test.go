package lease

// DB exposes the database to the tests, which change claims behind a
// holder's back.
func (l *Leases) DB() DB { return l.db }
