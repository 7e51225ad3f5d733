package bot

import "sync"

// recentInteractions is how many interaction ids a bot remembers to drop a
// second delivery of one. Discord answers an interaction for 15 minutes
// after it was created; a replay comes within seconds of the original
// (a gateway resume, a retry), long before this many others arrive.
const recentInteractions = 4096

// seenIDs remembers the last recentInteractions interaction ids, oldest
// forgotten first. Its zero value is ready to use.
type seenIDs struct {
	mu    sync.Mutex
	ids   map[string]bool
	order []string // a ring of the ids in ids
	next  int      // where the next id goes in order
}

// first records id and reports whether it had not been seen yet.
func (s *seenIDs) first(id string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ids[id] {
		return false
	}
	if s.ids == nil {
		s.ids = make(map[string]bool, recentInteractions)
		s.order = make([]string, recentInteractions)
	}
	if old := s.order[s.next]; old != "" {
		delete(s.ids, old)
	}
	s.order[s.next] = id
	s.next = (s.next + 1) % len(s.order)
	s.ids[id] = true
	return true
}
