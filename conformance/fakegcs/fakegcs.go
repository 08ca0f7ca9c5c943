// Package fakegcs runs fake-gcs-server (fsouza/fake-gcs-server v1.56,
// package fakestorage) on a loopback port, for tests and for the
// `cairn fake-gcs` command.
//
// Start serves the fake's HTTP API in-process on 127.0.0.1 (plain http, no
// authentication), keeping objects in memory or, with Options.Dir, in a
// directory. BucketURL returns the gs:// URL any program opens the bucket
// with through bucket.Open (bucket/gcs), carrying emulator=fake-gcs-server
// so that the adapter knows the fake's gaps. Serve runs a fake until its
// context ends. Package fakegcstest starts one for a test and opens
// buckets on it.
//
// The package imports neither the GCS client nor package testing: only
// bucket/gcs talks to the server, by URL.
//
// # What the fake does not do
//
// The fake ignores generation preconditions on delete and read and every
// metageneration precondition; buckets opened through BucketURL report
// that through their Capabilities (see bucket/gcs). It pages listings
// differently from GCS; bucket/gcs pages by itself. With Options.Dir, an
// object's name is a path under the bucket's directory, so a key cannot
// also be a "directory" of another key ("a" beside "a/b"), and very long
// keys hit the file system's limit on a name's length: use the memory
// backend for conformance runs.
//
// Clients must read through the JSON API: the Go client's default XML
// reads address the bucket by host name and miss. bucket/gcs builds such
// a client for URLs with an endpoint. The server also answers XML reads
// addressed to its own host:port (its public host), for other tools. The
// fake writes the Last-Modified header of a read in local time labelled
// GMT; the server corrects it to UTC, so reads agree with metadata in
// every time zone. With Options.Dir, a read racing an overwrite can get
// one version's headers with the other's bytes; the server answers such
// a whole-object read again until its bytes match its headers.
package fakegcs

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"regexp"
	"sync/atomic"
	"time"

	"github.com/fsouza/fake-gcs-server/fakestorage"
)

// Options configure a Server.
type Options struct {
	// Addr is the host:port to listen on. The host must be a loopback
	// address or "localhost". Empty means 127.0.0.1 on a free port.
	Addr string
	// Dir, if set, keeps buckets and objects in this directory, which is
	// created if missing (the fake's filesystem backend). Empty keeps
	// them in memory.
	Dir string
	// Log, if set, gets one line per request.
	Log io.Writer
}

// Server is a running fake.
type Server struct {
	fake   *fakestorage.Server
	hs     *http.Server
	served chan error
	url    string
	closed atomic.Bool
}

// Start starts a fake on a loopback address.
func Start(opts Options) (*Server, error) {
	addr := opts.Addr
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	if err := loopback(addr); err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("fakegcs: listen: %w", err)
	}
	host := ln.Addr().String()
	root := "http://" + host
	fake, err := fakestorage.NewServerWithOptions(fakestorage.Options{
		NoListener:  true, // served below, on ln
		Scheme:      "http",
		StorageRoot: opts.Dir,
		ExternalURL: root,
		PublicHost:  host,
		Writer:      opts.Log,
	})
	if err != nil {
		ln.Close()
		return nil, fmt.Errorf("fakegcs: %w", err)
	}
	s := &Server{
		fake:   fake,
		hs:     &http.Server{Handler: utcLastModified(wholeReads(fake.HTTPHandler())), ReadHeaderTimeout: 30 * time.Second},
		served: make(chan error, 1),
		url:    root,
	}
	go func() { s.served <- s.hs.Serve(ln) }()
	return s, nil
}

func loopback(addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("fakegcs: address %q: %w", addr, err)
	}
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return fmt.Errorf("fakegcs: address %q is not loopback: the fake has no authentication", addr)
	}
	return nil
}

// URL returns the server's root URL, http://127.0.0.1:PORT: the endpoint
// of gs:// URLs and, with /storage/v1/ appended, of a Go client.
func (s *Server) URL() string { return s.url }

// bucketName is GCS's rule for names without dots.
var bucketName = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{1,61}[a-z0-9]$`)

// CreateBucket creates a bucket unless it exists. name must follow GCS's
// rules (3 to 63 of a-z, 0-9, - and _, starting and ending with a letter
// or digit).
func (s *Server) CreateBucket(name string) (err error) {
	if !bucketName.MatchString(name) {
		return fmt.Errorf("fakegcs: bad bucket name %q", name)
	}
	defer func() {
		// The fake panics when its backend cannot create the bucket.
		if r := recover(); r != nil {
			err = fmt.Errorf("fakegcs: create bucket %q: %v", name, r)
		}
	}()
	s.fake.CreateBucketWithOpts(fakestorage.CreateBucketOpts{Name: name})
	return nil
}

// BucketURL returns the URL that opens the bucket name (under prefix)
// with bucket.Open:
//
//	gs://NAME/PREFIX?endpoint=http://127.0.0.1:PORT&emulator=fake-gcs-server
//
// The emulator parameter declares the fake to bucket/gcs, which then
// refuses conditional deletes and reports the fake's known gap. It does
// not create the bucket.
func (s *Server) BucketURL(name, prefix string) string {
	u := url.URL{Scheme: "gs", Host: name, Path: "/" + prefix}
	if prefix == "" {
		u.Path = ""
	}
	// The endpoint (http://127.0.0.1:PORT) needs no escaping in a query.
	return u.String() + "?endpoint=" + s.url + "&emulator=" + emulator
}

// emulator is the value of the emulator parameter of bucket/gcs's URLs
// that names this fake (gcs.EmulatorFakeGCSServer).
const emulator = "fake-gcs-server"

// Close stops the server. It is safe to call more than once.
func (s *Server) Close() error {
	if s.closed.Swap(true) {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var err error
	if serr := s.hs.Shutdown(ctx); serr != nil {
		// Connections still busy after the grace period are cut: the
		// server is stopping either way, so that is not a failure.
		if !errors.Is(serr, context.DeadlineExceeded) {
			err = serr
		}
		s.hs.Close()
	}
	if serr := <-s.served; !errors.Is(serr, http.ErrServerClosed) {
		err = errors.Join(err, serr)
	}
	s.fake.Stop()
	return err
}

// utcLastModified corrects the fake's Last-Modified header, which it
// writes as the local wall-clock time labelled GMT: wrong wherever the
// local time zone is not UTC.
func utcLastModified(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.ServeHTTP(&lastModifiedWriter{ResponseWriter: w}, r)
	})
}

type lastModifiedWriter struct {
	http.ResponseWriter
	fixed bool
}

func (w *lastModifiedWriter) fix() {
	if w.fixed {
		return
	}
	w.fixed = true
	h := w.Header()
	if t, err := http.ParseTime(h.Get("Last-Modified")); err == nil {
		local := time.Date(t.Year(), t.Month(), t.Day(), t.Hour(), t.Minute(), t.Second(), 0, time.Local)
		h.Set("Last-Modified", local.UTC().Format(http.TimeFormat))
	}
}

func (w *lastModifiedWriter) WriteHeader(code int) {
	w.fix()
	w.ResponseWriter.WriteHeader(code)
}

func (w *lastModifiedWriter) Write(b []byte) (int, error) {
	w.fix()
	return w.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the connection's writer.
func (w *lastModifiedWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// Serve runs a fake until ctx ends, for `cairn fake-gcs`: it starts one
// with opts, creates each of buckets, and writes to out one line per
// bucket with its gs:// URL (or, with no buckets, one line with the
// server's URL). It returns nil when ctx ends.
func Serve(ctx context.Context, opts Options, buckets []string, out io.Writer) error {
	s, err := Start(opts)
	if err != nil {
		return err
	}
	for _, b := range buckets {
		if err := s.CreateBucket(b); err != nil {
			s.Close()
			return err
		}
	}
	if len(buckets) == 0 {
		fmt.Fprintln(out, s.URL())
	}
	for _, b := range buckets {
		fmt.Fprintln(out, s.BucketURL(b, ""))
	}
	select {
	case <-ctx.Done():
		return s.Close()
	case err := <-s.served:
		s.served <- err // for Close
		s.Close()
		return fmt.Errorf("fakegcs: serve: %w", err)
	}
}
