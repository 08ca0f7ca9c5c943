package head

import "time"

// SetLoneProbeForTest sets how often s, paced, lists other replicas'
// intents for a batch of one call (contendedFor otherwise).
func SetLoneProbeForTest(s *Store, every time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.loneProbe = every
}
