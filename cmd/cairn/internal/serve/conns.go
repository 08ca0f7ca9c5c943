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
	freed *sync.Cond
	conns map[net.Conn]*connInfo
}

type connInfo struct {
	state http.ConnState
	since time.Time // when it entered its state
}

// NewConnLimit returns a limit of n connections (at least 1).
func NewConnLimit(n int) *ConnLimit {
	l := &ConnLimit{max: max(1, n), conns: map[net.Conn]*connInfo{}}
	l.freed = sync.NewCond(&l.mu)
	return l
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
		ln.l.mu.Lock()
		ln.l.freed.Signal()
		ln.l.mu.Unlock()
		return nil, err
	}
	ln.l.mu.Lock()
	ln.l.conns[c] = &connInfo{state: http.StateNew, since: time.Now()}
	ln.l.mu.Unlock()
	return c, nil
}

// makeRoom returns once fewer than max connections are open, closing an
// idle or silent one if it must.
func (l *ConnLimit) makeRoom() {
	l.mu.Lock()
	defer l.mu.Unlock()
	for len(l.conns) >= l.max {
		if c := l.victim(); c != nil {
			delete(l.conns, c)
			c.Close() // its ConnState(StateClosed) finds it gone
			continue
		}
		l.freed.Wait()
	}
}

// victim is the connection to close for a new one (l.mu held): the one
// idle longest, else the oldest silent one, else nil.
func (l *ConnLimit) victim() net.Conn {
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
		if _, ok := l.conns[c]; ok {
			delete(l.conns, c)
		}
		l.freed.Signal()
	default:
		if info, ok := l.conns[c]; ok {
			info.state, info.since = state, time.Now()
		}
	}
}

// Open reports the connections open now.
func (l *ConnLimit) Open() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.conns)
}
