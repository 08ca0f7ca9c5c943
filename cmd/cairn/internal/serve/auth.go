package serve

import (
	"crypto/sha256"
	"crypto/subtle"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"
)

// tokenDigest is what the server keeps of a token: comparing digests of
// equal length in constant time tells a caller nothing of a token's
// length or prefix.
type tokenDigest [sha256.Size]byte

// bearer returns the token of an "Authorization: Bearer T" header, and
// whether the header has that form (the scheme is case-insensitive).
func bearer(r *http.Request) (string, bool) {
	h := r.Header.Get("Authorization")
	scheme, tok, ok := strings.Cut(h, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	tok = strings.TrimSpace(tok)
	return tok, tok != ""
}

// authorize checks the request's bearer token against want, the digest of
// the agent's own token, in constant time.
func authorize(r *http.Request, want tokenDigest) (ok, present bool) {
	tok, present := bearer(r)
	if !present {
		return false, false
	}
	got := sha256.Sum256([]byte(tok))
	return subtle.ConstantTimeCompare(got[:], want[:]) == 1, true
}

// Failed authentication is rate-limited per client address: each address
// may fail Options.AuthFailBurst times at once (DefaultAuthFailBurst), and
// earns one more try every authFailEvery. Past that, every request of that address that needs
// authentication is refused with 429 TooManyRequests and Retry-After,
// whether its token is right or not, so that guessing costs a second a
// try instead of a millisecond.
const (
	DefaultAuthFailBurst = 10
	authFailEvery        = time.Second
	// authFailClients bounds the addresses remembered; past it the
	// oldest entries are dropped (they have earned their tries back).
	authFailClients = 10000
)

// authLimiter counts the failed authentications of each client address.
type authLimiter struct {
	burst float64 // tries at once; 0: no limit

	mu      sync.Mutex
	clients map[string]*authClient
}

type authClient struct {
	tries float64   // tries left
	at    time.Time // when tries was last computed
}

// clientAddr is the address a request came from, without its port.
func clientAddr(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}

// blocked reports whether addr has no try left now, and when it will.
func (l *authLimiter) blocked(addr string, now time.Time) (bool, time.Duration) {
	if l.burst == 0 {
		return false, 0
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	c, ok := l.clients[addr]
	if !ok {
		return false, 0
	}
	c.refill(now, l.burst)
	if c.tries >= 1 {
		return false, 0
	}
	return true, time.Duration((1 - c.tries) * float64(authFailEvery))
}

// failed spends one of addr's tries.
func (l *authLimiter) failed(addr string, now time.Time) {
	if l.burst == 0 {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.clients == nil {
		l.clients = map[string]*authClient{}
	}
	c, ok := l.clients[addr]
	if !ok {
		if len(l.clients) >= authFailClients {
			l.prune(now)
		}
		c = &authClient{tries: l.burst, at: now}
		l.clients[addr] = c
	}
	c.refill(now, l.burst)
	c.tries = max(c.tries-1, 0)
}

// prune drops the clients that have every try back, and if none has, all
// of them (l.mu held).
func (l *authLimiter) prune(now time.Time) {
	for addr, c := range l.clients {
		if c.refill(now, l.burst); c.tries >= l.burst {
			delete(l.clients, addr)
		}
	}
	if len(l.clients) >= authFailClients {
		clear(l.clients)
	}
}

func (c *authClient) refill(now time.Time, burst float64) {
	if now.After(c.at) {
		c.tries = min(burst, c.tries+float64(now.Sub(c.at))/float64(authFailEvery))
		c.at = now
	}
}
