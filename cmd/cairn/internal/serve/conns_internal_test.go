package serve

import (
	"math/rand/v2"
	"net"
	"net/http"
	"testing"
	"time"
)

// TestConnLimitCandidates: the lists of connections victim may close
// follow every state change, close and forced close, so that victim
// answers at once with none (every connection busy) and otherwise picks
// what a scan of every connection picks: the one idle longest, else the
// oldest silent new one.
func TestConnLimitCandidates(t *testing.T) {
	l := NewConnLimit(8)
	var conns []net.Conn
	for range 8 {
		a, b := net.Pipe()
		defer a.Close()
		defer b.Close()
		l.mu.Lock()
		l.track(a, http.StateNew, time.Now().Add(-time.Minute))
		l.mu.Unlock()
		conns = append(conns, a)
	}
	check := func(step int) {
		t.Helper()
		l.mu.Lock()
		defer l.mu.Unlock()
		want := 0
		var best net.Conn // the scan's pick
		var bestInfo *connInfo
		for c, info := range l.conns {
			switch {
			case info.state == http.StateIdle:
				want++
				if bestInfo == nil || bestInfo.state != http.StateIdle || info.since.Before(bestInfo.since) {
					best, bestInfo = c, info
				}
			case info.state == http.StateNew:
				want++
				if time.Since(info.since) > time.Second && (bestInfo == nil || (bestInfo.state == http.StateNew && info.since.Before(bestInfo.since))) {
					best, bestInfo = c, info
				}
			}
		}
		if got := l.idle.Len() + l.fresh.Len(); got != want {
			t.Fatalf("step %d: %d candidates listed, %d in fact", step, got, want)
		}
		if v := l.victim(); v != best {
			t.Fatalf("step %d: victim %v, a scan picks %v", step, v, best)
		}
	}
	r := rand.New(rand.NewPCG(1, 2))
	states := []http.ConnState{http.StateActive, http.StateIdle, http.StateActive, http.StateClosed, http.StateHijacked}
	for step := range 400 {
		c := conns[r.IntN(len(conns))]
		switch r.IntN(6) {
		case 0: // makeRoom's forced close, then the server's hook
			l.mu.Lock()
			l.forget(c)
			l.mu.Unlock()
			l.ConnState(c, http.StateClosed)
		case 1: // a closed connection's slot is taken by a new one
			l.mu.Lock()
			if _, ok := l.conns[c]; !ok {
				l.track(c, http.StateNew, time.Now().Add(-time.Minute)) // silent
			}
			l.mu.Unlock()
		default:
			l.ConnState(c, states[r.IntN(len(states))])
		}
		check(step)
	}
	for _, c := range conns { // all busy: nothing to close
		l.ConnState(c, http.StateActive)
	}
	check(-1)
	l.mu.Lock()
	defer l.mu.Unlock()
	if n := l.idle.Len() + l.fresh.Len(); n != 0 || l.victim() != nil {
		t.Fatalf("every connection active, yet %d candidates", n)
	}
}
