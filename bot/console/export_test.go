package console

// OAuthStates is how many Discord sign-ins are in progress.
func (s *Server) OAuthStates() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.states)
}
