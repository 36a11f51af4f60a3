package db

// OnPluginChange sets fn to be called after every commit that created, changed or
// deleted a plugin instance's record, once per commit, so what caches the records (the
// event outbox's subscriptions) can reload them, here and over the bus in other
// processes. fn runs on the committing goroutine and must not block; nil removes it.
func (s *Store) OnPluginChange(fn func()) {
	if fn == nil {
		s.onPluginChange.Store(nil)
		return
	}
	s.onPluginChange.Store(&fn)
}

// reportPluginChange calls the OnPluginChange hook for a committed transaction that wrote
// a plugin instance's record.
func (s *Store) reportPluginChange(t *txn) {
	if !t.pluginChanged {
		return
	}
	if fn := s.onPluginChange.Load(); fn != nil {
		(*fn)()
	}
}
