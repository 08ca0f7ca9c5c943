package bucket

import (
	"context"
	"fmt"
	"net/url"
	"sort"
	"strings"
	"sync"
)

// Opener opens a Bucket from a parsed URL. Adapters register one per
// scheme with Register.
type Opener func(ctx context.Context, u *url.URL) (Bucket, error)

var (
	openersMu sync.RWMutex
	openers   = map[string]Opener{}
)

// Register makes an adapter available to Open under scheme. It panics if
// the scheme is already registered or open is nil: two adapters claiming
// one scheme is a programming error.
func Register(scheme string, open Opener) {
	openersMu.Lock()
	defer openersMu.Unlock()
	if open == nil {
		panic("bucket: Register opener is nil")
	}
	if _, dup := openers[scheme]; dup {
		panic("bucket: Register called twice for scheme " + scheme)
	}
	openers[scheme] = open
}

// Schemes lists the registered schemes, sorted.
func Schemes() []string {
	openersMu.RLock()
	defer openersMu.RUnlock()
	s := make([]string, 0, len(openers))
	for k := range openers {
		s = append(s, k)
	}
	sort.Strings(s)
	return s
}

// Open opens the bucket a URL names, for example "mem://x",
// "file:///var/lib/cairn", "gs://bucket/prefix?endpoint=http://127.0.0.1:4443"
// or "s3://bucket/prefix?endpoint=http://127.0.0.1:7070&region=us-east-1&path_style=true".
// The adapter for the scheme must have been imported.
func Open(ctx context.Context, rawURL string) (Bucket, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, fmt.Errorf("bucket: open %q: %w", rawURL, err)
	}
	if u.Scheme == "" {
		return nil, fmt.Errorf("bucket: open %q: no scheme (want one of %s)", rawURL, strings.Join(Schemes(), ", "))
	}
	openersMu.RLock()
	open := openers[u.Scheme]
	openersMu.RUnlock()
	if open == nil {
		return nil, fmt.Errorf("bucket: open %q: unknown scheme %q (registered: %s)", rawURL, u.Scheme, strings.Join(Schemes(), ", "))
	}
	b, err := open(ctx, u)
	if err != nil {
		return nil, fmt.Errorf("bucket: open %q: %w", rawURL, err)
	}
	return b, nil
}

// Query reads a URL's query parameters for an opener, refusing any it
// does not know and any given twice.
func Query(u *url.URL, known ...string) (map[string]string, error) {
	q, err := url.ParseQuery(u.RawQuery)
	if err != nil {
		return nil, fmt.Errorf("query: %w", err)
	}
	out := make(map[string]string, len(q))
	for k, vs := range q {
		ok := false
		for _, name := range known {
			ok = ok || k == name
		}
		if !ok {
			return nil, fmt.Errorf("unknown query parameter %q (known: %s)", k, strings.Join(known, ", "))
		}
		if len(vs) != 1 {
			return nil, fmt.Errorf("query parameter %q given %d times", k, len(vs))
		}
		out[k] = vs[0]
	}
	return out, nil
}
