package serve

import (
	"math/rand/v2"
	"net"
	"net/http"
	"testing"
	"time"
)

// TestConnLimitCandidates: the count of connections victim may close
// follows every state change, close and forced close, so that victim
// answers at once with none (every connection busy) and still finds one
// when there is one.
func TestConnLimitCandidates(t *testing.T) {
	l := NewConnLimit(8)
	var conns []net.Conn
	for range 8 {
		a, b := net.Pipe()
		defer a.Close()
		defer b.Close()
		l.mu.Lock()
		l.conns[a] = &connInfo{state: http.StateNew, since: time.Now().Add(-time.Minute)}
		l.candidates++
		l.mu.Unlock()
		conns = append(conns, a)
	}
	check := func(step int) {
		t.Helper()
		l.mu.Lock()
		defer l.mu.Unlock()
		want := 0
		for _, info := range l.conns {
			want += candidate(info.state)
		}
		if l.candidates != want {
			t.Fatalf("step %d: %d candidates counted, %d in fact", step, l.candidates, want)
		}
		if v := l.victim(); (v == nil) != (want == 0) {
			t.Fatalf("step %d: victim %v with %d candidates", step, v, want)
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
				l.conns[c] = &connInfo{state: http.StateNew, since: time.Now().Add(-time.Minute)} // silent
				l.candidates++
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
	if l.candidates != 0 || l.victim() != nil {
		t.Fatalf("every connection active, yet %d candidates", l.candidates)
	}
}
