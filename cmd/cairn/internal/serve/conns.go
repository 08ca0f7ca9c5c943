package serve

import (
	"net"
	"net/http"
	"sync"
	"time"
)

// ConnLimit bounds the connections a server holds open. At the bound, a
// new connection is accepted only after an old one makes room: the
// connection idle longest (a kept-alive connection between requests) is
// closed for it, else the oldest that has not sent a request in a second,
// else the listener waits for one to close. So idle and silent clients,
// however many, cannot lock out a client that has a request to make, and
// the process's file descriptors stay bounded.
//
// Use Listener to wrap the listener and ConnState as the http.Server's
// ConnState hook.
type ConnLimit struct {
	max int

	mu    sync.Mutex
	conns map[net.Conn]*connInfo
	// candidates counts the connections idle or new (not yet sent a
	// request): only they may be closed for room, so with none victim
	// need not look. At the bound under load every connection is active,
	// and a scan of all of them at each wake-up took 6% of a server's CPU.
	candidates int
	// changed is signalled when a connection closes or goes idle, so that
	// an Accept waiting for room looks again.
	changed chan struct{}
}

type connInfo struct {
	state http.ConnState
	since time.Time // when it entered its state
}

// NewConnLimit returns a limit of n connections (at least 1).
func NewConnLimit(n int) *ConnLimit {
	return &ConnLimit{max: max(1, n), conns: map[net.Conn]*connInfo{}, changed: make(chan struct{}, 1)}
}

// Listener wraps ln so that Accept holds to the limit.
func (l *ConnLimit) Listener(ln net.Listener) net.Listener {
	return &limitedListener{Listener: ln, l: l}
}

type limitedListener struct {
	net.Listener
	l *ConnLimit
}

func (ln *limitedListener) Accept() (net.Conn, error) {
	ln.l.makeRoom()
	c, err := ln.Listener.Accept()
	if err != nil {
		return nil, err
	}
	ln.l.mu.Lock()
	ln.l.conns[c] = &connInfo{state: http.StateNew, since: time.Now()}
	ln.l.candidates++
	ln.l.mu.Unlock()
	return c, nil
}

// makeRoom returns once fewer than max connections are open, closing an
// idle or silent one if it must. With none to close it waits for a
// change, and looks again at least every roomPoll (a connection that
// has sent nothing becomes silent without any event).
func (l *ConnLimit) makeRoom() {
	for {
		l.mu.Lock()
		for len(l.conns) >= l.max {
			c := l.victim()
			if c == nil {
				break
			}
			l.forget(c)
			c.Close() // its ConnState(StateClosed) finds it gone
		}
		room := len(l.conns) < l.max
		l.mu.Unlock()
		if room {
			return
		}
		select {
		case <-l.changed:
		case <-time.After(roomPoll):
		}
	}
}

// roomPoll bounds how long an Accept at the bound waits before it looks
// for a connection to close again.
const roomPoll = 250 * time.Millisecond

// victim is the connection to close for a new one (l.mu held): the one
// idle longest, else the oldest silent one, else nil.
func (l *ConnLimit) victim() net.Conn {
	if l.candidates == 0 {
		return nil
	}
	var best net.Conn
	var bestInfo *connInfo
	silent := time.Now().Add(-time.Second)
	for c, info := range l.conns {
		switch {
		case info.state == http.StateIdle:
			if bestInfo == nil || bestInfo.state != http.StateIdle || info.since.Before(bestInfo.since) {
				best, bestInfo = c, info
			}
		case info.state == http.StateNew && info.since.Before(silent):
			if bestInfo == nil || (bestInfo.state == http.StateNew && info.since.Before(bestInfo.since)) {
				best, bestInfo = c, info
			}
		}
	}
	return best
}

// ConnState tracks the connections' states; set it as the
// http.Server's ConnState.
func (l *ConnLimit) ConnState(c net.Conn, state http.ConnState) {
	l.mu.Lock()
	defer l.mu.Unlock()
	switch state {
	case http.StateClosed, http.StateHijacked:
		l.forget(c)
	default:
		if info, ok := l.conns[c]; ok {
			l.candidates += candidate(state) - candidate(info.state)
			info.state, info.since = state, time.Now()
		}
	}
	if state != http.StateActive && state != http.StateNew {
		select {
		case l.changed <- struct{}{}:
		default:
		}
	}
}

// forget drops c from the open connections (l.mu held), if it is there.
func (l *ConnLimit) forget(c net.Conn) {
	if info, ok := l.conns[c]; ok {
		l.candidates -= candidate(info.state)
		delete(l.conns, c)
	}
}

// candidate is 1 for the states victim may close a connection in.
func candidate(s http.ConnState) int {
	if s == http.StateIdle || s == http.StateNew {
		return 1
	}
	return 0
}

// Open reports the connections open now.
func (l *ConnLimit) Open() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.conns)
}
