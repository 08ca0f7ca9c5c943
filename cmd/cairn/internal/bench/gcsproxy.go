package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"mime"
	"mime/multipart"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// gcsProxy stands between `cairn serve` processes and a GCS emulator in
// another process, as the network and GCS's limits would: every request
// waits rtt before it is forwarded, and a write (upload, delete, metadata
// change) of an object written less than window ago is answered 429
// without being forwarded, as GCS answers writes to one object faster
// than about one a second. It counts requests, throttled writes and
// rounds (groups of requests whose times overlap), so a row can say what
// an acknowledged put cost on the wire.
type gcsProxy struct {
	rtt    time.Duration
	window time.Duration
	rp     *httputil.ReverseProxy
	srv    *http.Server
	addr   string
	bypass atomic.Bool // forward at once, unthrottled and uncounted
	trace  io.Writer   // a line per request not bypassed, if set
	began  time.Time

	mu        sync.Mutex
	last      map[string]time.Time // object -> when a write of it was last forwarded
	inFlight  int
	requests  int64
	writes    int64
	throttled int64
	rounds    int64
	read      int64 // response bytes
	written   int64 // request bytes
	lists     int64
	deletes   int64
}

// proxyCounts are a proxy's counters at one moment.
type proxyCounts struct {
	requests, writes, throttled, rounds, read, written, lists, deletes int64
}

func (c proxyCounts) since(before proxyCounts) proxyCounts {
	return proxyCounts{c.requests - before.requests, c.writes - before.writes, c.throttled - before.throttled,
		c.rounds - before.rounds, c.read - before.read, c.written - before.written,
		c.lists - before.lists, c.deletes - before.deletes}
}

// startGCSProxy listens on a loopback port and forwards to target (the
// emulator's http://host:port).
func startGCSProxy(target string, rtt time.Duration, writeRate float64, trace io.Writer) (*gcsProxy, error) {
	u, err := url.Parse(target)
	if err != nil {
		return nil, fmt.Errorf("bench: proxy target %q: %w", target, err)
	}
	p := &gcsProxy{rtt: rtt, last: map[string]time.Time{}, trace: trace, began: time.Now()}
	if writeRate > 0 {
		p.window = time.Duration(float64(time.Second) / writeRate)
	}
	p.rp = httputil.NewSingleHostReverseProxy(u)
	p.rp.Transport = &http.Transport{MaxIdleConnsPerHost: 256, IdleConnTimeout: 30 * time.Second}
	p.rp.ErrorLog = log.New(io.Discard, "", 0) // a request its client gave up on is no news
	p.rp.ModifyResponse = func(resp *http.Response) error {
		resp.Body = &countingBody{ReadCloser: resp.Body, n: &p.read, mu: &p.mu}
		return nil
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("bench: proxy: %w", err)
	}
	p.addr = "http://" + ln.Addr().String()
	p.srv = &http.Server{Handler: p, ReadHeaderTimeout: 10 * time.Second}
	go p.srv.Serve(ln)
	return p, nil
}

func (p *gcsProxy) close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return p.srv.Shutdown(ctx)
}

func (p *gcsProxy) counts() proxyCounts {
	p.mu.Lock()
	defer p.mu.Unlock()
	return proxyCounts{p.requests, p.writes, p.throttled, p.rounds, p.read, p.written, p.lists, p.deletes}
}

func (p *gcsProxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if p.bypass.Load() {
		p.rp.ServeHTTP(w, r)
		return
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	p.begin(r, int64(len(body)))
	defer p.end()
	if p.trace != nil {
		sw := &statusWriter{ResponseWriter: w, status: http.StatusOK}
		w = sw
		start := time.Now()
		defer func() {
			p.mu.Lock()
			defer p.mu.Unlock()
			fmt.Fprintf(p.trace, "trace %9.1fms %6.1fms %-6s %d %8d %s\n", float64(start.Sub(p.began).Microseconds())/1000,
				float64(time.Since(start).Microseconds())/1000, r.Method, sw.status, len(body), r.URL.RequestURI())
		}()
	}
	t := time.NewTimer(p.rtt)
	select {
	case <-t.C:
	case <-r.Context().Done():
		t.Stop()
		return
	}
	if obj, ok := writtenObject(r, body); ok && !p.admit(obj) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusTooManyRequests)
		io.WriteString(w, `{"error":{"code":429,"message":"The object exceeded the rate limit for object mutation operations (create, update, and delete).","errors":[{"reason":"rateLimitExceeded"}]}}`)
		return
	}
	p.rp.ServeHTTP(w, r)
}

func (p *gcsProxy) begin(r *http.Request, written int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	switch path := r.URL.Path; {
	case r.Method == http.MethodDelete:
		p.deletes++
	case r.Method == http.MethodGet && (strings.HasSuffix(path, "/o") || strings.HasSuffix(path, "/o/")):
		p.lists++
	}
	if p.inFlight == 0 {
		p.rounds++
	}
	p.inFlight++
	p.requests++
	p.written += written
}

func (p *gcsProxy) end() {
	p.mu.Lock()
	p.inFlight--
	p.mu.Unlock()
}

// admit takes obj's write slot, or reports that a write of it was
// forwarded less than a window ago. The table is pruned of expired slots
// as it grows.
func (p *gcsProxy) admit(obj string) bool {
	now := time.Now()
	p.mu.Lock()
	defer p.mu.Unlock()
	p.writes++
	if p.window <= 0 {
		return true
	}
	if at, ok := p.last[obj]; ok && now.Sub(at) < p.window {
		p.throttled++
		return false
	}
	if len(p.last) > 1<<16 {
		for k, at := range p.last {
			if now.Sub(at) >= p.window {
				delete(p.last, k)
			}
		}
	}
	p.last[obj] = now
	return true
}

// writtenObject names the object a JSON-API request writes: an upload
// (its name in the query or in the metadata part of a multipart body),
// or a DELETE, PATCH, PUT or POST on /storage/v1/b/B/o/NAME.
func writtenObject(r *http.Request, body []byte) (string, bool) {
	path := r.URL.EscapedPath()
	if strings.HasPrefix(path, "/upload/storage/v1/b/") {
		bucket := strings.TrimSuffix(strings.TrimPrefix(path, "/upload/storage/v1/b/"), "/o")
		if name := r.URL.Query().Get("name"); name != "" {
			return bucket + "/" + name, true
		}
		if name := uploadName(r.Header.Get("Content-Type"), body); name != "" {
			return bucket + "/" + name, true
		}
		return bucket + "/?", true // unnamed: one slot for all such, the cautious reading
	}
	if r.Method == http.MethodGet || r.Method == http.MethodHead {
		return "", false
	}
	rest, ok := strings.CutPrefix(path, "/storage/v1/b/")
	if !ok {
		return "", false
	}
	bucket, obj, ok := strings.Cut(rest, "/o/")
	if !ok || obj == "" {
		return "", false
	}
	name, err := url.PathUnescape(obj)
	if err != nil {
		name = obj
	}
	return bucket + "/" + name, true
}

// uploadName reads the object name from the JSON metadata of an upload:
// the first part of a multipart/related body, or the whole body of a
// resumable upload's first request.
func uploadName(contentType string, body []byte) string {
	var meta struct{ Name string }
	mt, params, err := mime.ParseMediaType(contentType)
	if err == nil && strings.HasPrefix(mt, "multipart/") {
		part, err := multipart.NewReader(bytes.NewReader(body), params["boundary"]).NextPart()
		if err != nil {
			return ""
		}
		if json.NewDecoder(part).Decode(&meta) != nil {
			return ""
		}
		return meta.Name
	}
	if json.Unmarshal(body, &meta) != nil {
		return ""
	}
	return meta.Name
}

// countingBody adds the bytes read through it to *n.
type countingBody struct {
	io.ReadCloser
	n  *int64
	mu *sync.Mutex
}

func (b *countingBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if n > 0 {
		b.mu.Lock()
		*b.n += int64(n)
		b.mu.Unlock()
	}
	return n, err
}

// statusWriter remembers the status of an answer, for the trace.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	w.status = code
	w.ResponseWriter.WriteHeader(code)
}
