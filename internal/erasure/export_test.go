package erasure

import "time"

// SetInterval shortens the background purge's interval for a test.
func (s *Service) SetInterval(d time.Duration) { s.interval = d }
