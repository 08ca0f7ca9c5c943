package gcs_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/cairnstore/cairn/bucket"
	"github.com/cairnstore/cairn/bucket/gcs"
	"github.com/cairnstore/cairn/conformance/fakegcs"
	"github.com/cairnstore/cairn/conformance/fakegcs/fakegcstest"
)

// forwardThen passes the first request of kind k to the server and then
// replaces its answer by what lose returns. Later requests (a retry) pass
// through untouched, as they would after a brief network fault.
func forwardThen(k string, lose func(req *http.Request) (*http.Response, error)) func(*http.Request, func() (*http.Response, error)) (*http.Response, error) {
	var once sync.Once
	return func(req *http.Request, forward func() (*http.Response, error)) (*http.Response, error) {
		first := false
		if kind(req) == k {
			once.Do(func() { first = true })
		}
		if !first {
			return nil, nil
		}
		resp, err := forward()
		if err != nil {
			return nil, err
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return lose(req)
	}
}

// instead answers every request of kind k with code, without forwarding.
func instead(k string, code int) func(*http.Request, func() (*http.Response, error)) (*http.Response, error) {
	return func(req *http.Request, _ func() (*http.Response, error)) (*http.Response, error) {
		if kind(req) != k {
			return nil, nil
		}
		return answer(req, code), nil
	}
}

var errReset = &net.OpError{Op: "read", Net: "tcp", Err: syscall.ECONNRESET}

// TestLostWriteIsAmbiguous: a write reaches the server and lands, but its
// answer is a 503 or a broken connection. The adapter must report
// ErrAmbiguous (never a false ErrPrecondition from a retry that finds its
// own write) after exactly one request.
func TestLostWriteIsAmbiguous(t *testing.T) {
	srv := fakegcstest.New(t)
	losses := map[string]func(*http.Request) (*http.Response, error){
		"503": func(req *http.Request) (*http.Response, error) {
			return answer(req, http.StatusServiceUnavailable), nil
		},
		"reset": func(*http.Request) (*http.Response, error) { return nil, errReset },
	}
	for lname, lose := range losses {
		for _, cname := range []string{"if-absent", "if-version", "unconditional"} {
			t.Run(lname+"/"+cname, func(t *testing.T) {
				ctx := t.Context()
				b, r := newRecorded(t, srv, "lost-"+lname+"-"+cname, "", gcs.Options{FakeServer: true})
				cond := bucket.Unconditional
				switch cname {
				case "if-absent":
					cond = bucket.IfAbsent()
				case "if-version":
					a, err := b.Put(ctx, "head", []byte("old"), bucket.Unconditional)
					if err != nil {
						t.Fatal(err)
					}
					cond = bucket.IfVersion(a.Version)
				}
				before := r.count("upload")
				r.setHook(forwardThen("upload", lose))
				a, err := b.Put(ctx, "head", []byte("new"), cond)
				r.setHook(nil)
				if !errors.Is(err, bucket.ErrAmbiguous) || errors.Is(err, bucket.ErrPrecondition) {
					t.Fatalf("put with a lost answer: %v, want ErrAmbiguous and not ErrPrecondition", err)
				}
				if a != (bucket.Attrs{}) {
					t.Errorf("failed put returned attrs %+v", a)
				}
				if got := r.count("upload") - before; got != 1 {
					t.Errorf("%d upload requests, want exactly 1 (no retry)", got)
				}
				// The write did land: the ambiguity was real.
				body, _, err := b.Get(ctx, "head")
				if err != nil || string(body) != "new" {
					t.Fatalf("after the lost write: %q, %v; want the write to have landed", body, err)
				}
			})
		}
	}
}

// TestLostDeleteIsAmbiguous: the same for deletes, conditional (on a bucket
// that claims ConditionalDelete) and unconditional.
func TestLostDeleteIsAmbiguous(t *testing.T) {
	srv := fakegcstest.New(t)
	for _, conditional := range []bool{false, true} {
		name := map[bool]string{false: "lost-delete", true: "lost-cond-delete"}[conditional]
		t.Run(name, func(t *testing.T) {
			ctx := t.Context()
			b, r := newRecorded(t, srv, name, "", gcs.Options{})
			a, err := b.Put(ctx, "k", []byte("x"), bucket.Unconditional)
			if err != nil {
				t.Fatal(err)
			}
			cond := bucket.Unconditional
			if conditional {
				cond = bucket.IfVersion(a.Version)
			}
			r.setHook(forwardThen("delete", func(req *http.Request) (*http.Response, error) {
				return answer(req, http.StatusBadGateway), nil
			}))
			err = b.Delete(ctx, "k", cond)
			r.setHook(nil)
			if !errors.Is(err, bucket.ErrAmbiguous) {
				t.Fatalf("delete with a lost answer: %v, want ErrAmbiguous", err)
			}
			if got := r.count("delete"); got != 1 {
				t.Errorf("%d delete requests, want 1", got)
			}
		})
	}
}

// TestInjectedAnswers checks the mapping of server answers to sentinels,
// with the request answered by the test instead of the server.
func TestInjectedAnswers(t *testing.T) {
	srv := fakegcstest.New(t)
	ctx := t.Context()
	b, r := newRecorded(t, srv, "answers", "pre/", gcs.Options{ReadAttempts: 1})
	a, err := b.Put(ctx, "k", []byte("kept"), bucket.Unconditional)
	if err != nil {
		t.Fatal(err)
	}
	ops := map[string]func() error{
		"upload": func() error { _, err := b.Put(ctx, "k", []byte("other"), bucket.IfVersion(a.Version)); return err },
		"media":  func() error { _, _, err := b.Get(ctx, "k"); return err },
		"stat":   func() error { _, err := b.Stat(ctx, "k"); return err },
		"list":   func() error { _, err := b.List(ctx, bucket.ListOptions{}); return err },
		"delete": func() error { return b.Delete(ctx, "k", bucket.IfVersion(a.Version)) },
	}
	cases := []struct {
		kind string
		code int
		want error // nil: no sentinel at all
	}{
		{"upload", 412, bucket.ErrPrecondition},
		{"upload", 429, bucket.ErrThrottled},
		{"upload", 500, bucket.ErrAmbiguous},
		{"upload", 408, bucket.ErrAmbiguous},
		{"upload", 403, bucket.ErrDenied},
		{"upload", 404, bucket.ErrNoBucket}, // a missing bucket, not a missing object
		{"media", 404, bucket.ErrNotExist},
		{"media", 429, bucket.ErrThrottled},
		{"media", 503, bucket.ErrUnavailable},
		{"stat", 404, bucket.ErrNotExist},
		{"stat", 429, bucket.ErrThrottled},
		{"stat", 500, bucket.ErrUnavailable},
		{"list", 429, bucket.ErrThrottled},
		{"list", 503, bucket.ErrUnavailable},
		{"list", 403, bucket.ErrDenied},
		{"stat", 401, bucket.ErrDenied},
		{"delete", 412, bucket.ErrPrecondition},
		{"delete", 404, bucket.ErrPrecondition}, // conditional delete of a missing object
		{"delete", 429, bucket.ErrThrottled},
		{"delete", 503, bucket.ErrAmbiguous},
	}
	sentinels := []error{bucket.ErrNotExist, bucket.ErrPrecondition, bucket.ErrThrottled, bucket.ErrUnavailable, bucket.ErrAmbiguous, bucket.ErrIntegrity, bucket.ErrUnsupported, bucket.ErrNoBucket, bucket.ErrDenied}
	for _, c := range cases {
		before := r.count(c.kind)
		r.setHook(instead(c.kind, c.code))
		err := ops[c.kind]()
		r.setHook(nil)
		if err == nil {
			t.Errorf("%s answered %d: no error", c.kind, c.code)
			continue
		}
		for _, s := range sentinels {
			if errors.Is(err, s) != (s == c.want) {
				t.Errorf("%s answered %d: %v; want sentinel %v only", c.kind, c.code, err, c.want)
				break
			}
		}
		if got := r.count(c.kind) - before; got != 1 {
			t.Errorf("%s answered %d: %d requests, want 1", c.kind, c.code, got)
		}
	}
	// None of it changed the object.
	if body, g, err := b.Get(ctx, "k"); err != nil || string(body) != "kept" || g.Version != a.Version {
		t.Fatalf("object after injected answers: %q %+v %v", body, g, err)
	}
}

func TestUnconditionalDeleteOfMissingIsNil(t *testing.T) {
	srv := fakegcstest.New(t)
	b, r := newRecorded(t, srv, "delete-missing", "", gcs.Options{})
	r.setHook(instead("delete", 404))
	if err := b.Delete(t.Context(), "gone", bucket.Unconditional); err != nil {
		t.Fatalf("unconditional delete answered 404: %v, want nil", err)
	}
}

// TestReadRetriesAreBounded: reads are retried by the client, but only
// ReadAttempts times, and then surface as ErrUnavailable.
func TestReadRetriesAreBounded(t *testing.T) {
	srv := fakegcstest.New(t)
	b, r := newRecorded(t, srv, "read-retries", "", gcs.Options{ReadAttempts: 3})
	r.setHook(instead("stat", 503))
	_, err := b.Stat(t.Context(), "k")
	if !errors.Is(err, bucket.ErrUnavailable) {
		t.Fatalf("stat answered 503: %v, want ErrUnavailable", err)
	}
	if got := r.count("stat"); got != 3 {
		t.Fatalf("%d stat requests, want 3", got)
	}
}

// TestCorruptReadIsIntegrityError: a body damaged on the way does not
// match the CRC32C the server sent.
func TestCorruptReadIsIntegrityError(t *testing.T) {
	srv := fakegcstest.New(t)
	ctx := t.Context()
	b, r := newRecorded(t, srv, "corrupt", "", gcs.Options{ReadAttempts: 1})
	if _, err := b.Put(ctx, "k", []byte("precious bytes"), bucket.Unconditional); err != nil {
		t.Fatal(err)
	}
	r.setHook(func(req *http.Request, forward func() (*http.Response, error)) (*http.Response, error) {
		if kind(req) != "media" {
			return nil, nil
		}
		resp, err := forward()
		if err != nil {
			return nil, err
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			return nil, err
		}
		body[0] ^= 1
		resp.Body = io.NopCloser(bytes.NewReader(body))
		return resp, nil
	})
	body, a, err := b.Get(ctx, "k")
	if !errors.Is(err, bucket.ErrIntegrity) || body != nil || a != (bucket.Attrs{}) {
		t.Fatalf("get of a corrupted body: %q, %+v, %v; want ErrIntegrity", body, a, err)
	}
}

// TestCancelledWrite: a write under way when the caller gives up is
// ErrAmbiguous and still context.Canceled (or DeadlineExceeded).
func TestCancelledWrite(t *testing.T) {
	srv := fakegcstest.New(t)
	b, r := newRecorded(t, srv, "cancelled", "", gcs.Options{})
	r.setHook(func(req *http.Request, forward func() (*http.Response, error)) (*http.Response, error) {
		if kind(req) != "upload" {
			return nil, nil
		}
		<-req.Context().Done() // the answer never comes
		return nil, req.Context().Err()
	})
	ctx, cancel := context.WithCancel(t.Context())
	time.AfterFunc(50*time.Millisecond, cancel)
	_, err := b.Put(ctx, "k", []byte("x"), bucket.IfAbsent())
	if !errors.Is(err, context.Canceled) || !errors.Is(err, bucket.ErrAmbiguous) {
		t.Fatalf("put cancelled in flight: %v, want context.Canceled and ErrAmbiguous", err)
	}
	ctx, cancel = context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	_, err = b.Put(ctx, "k2", []byte("x"), bucket.Unconditional)
	if !errors.Is(err, context.DeadlineExceeded) || !errors.Is(err, bucket.ErrAmbiguous) {
		t.Fatalf("put timed out in flight: %v, want context.DeadlineExceeded and ErrAmbiguous", err)
	}
}

// TestUnreachable: a write that could not connect was never sent, so it is
// ErrUnavailable, not ErrAmbiguous.
func TestUnreachable(t *testing.T) {
	srv, err := fakegcs.Start(fakegcs.Options{})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := newRecorded(t, srv, "gone", "", gcs.Options{ReadAttempts: 1})
	if err := srv.Close(); err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	_, err = b.Put(ctx, "k", []byte("x"), bucket.IfAbsent())
	if !errors.Is(err, bucket.ErrUnavailable) || errors.Is(err, bucket.ErrAmbiguous) {
		t.Errorf("put to a closed port: %v, want ErrUnavailable", err)
	}
	if _, _, err := b.Get(ctx, "k"); !errors.Is(err, bucket.ErrUnavailable) {
		t.Errorf("get from a closed port: %v, want ErrUnavailable", err)
	}
	if _, err := b.List(ctx, bucket.ListOptions{}); !errors.Is(err, bucket.ErrUnavailable) {
		t.Errorf("list from a closed port: %v, want ErrUnavailable", err)
	}
}

// TestVersionsThatAreNotGenerations: a version the adapter could not have
// handed out matches nothing, and nothing is sent. "0" matters most: as a
// generation precondition it would mean "does not exist".
func TestVersionsThatAreNotGenerations(t *testing.T) {
	srv := fakegcstest.New(t)
	ctx := t.Context()
	b, r := newRecorded(t, srv, "versions", "", gcs.Options{})
	a, err := b.Put(ctx, "k", []byte("x"), bucket.Unconditional)
	if err != nil {
		t.Fatal(err)
	}
	sent := r.total()
	for _, v := range []bucket.Version{"0", "-1", "abc", "0" + a.Version, a.Version + " ", ""} {
		if _, err := b.Put(ctx, "fresh", []byte("y"), bucket.IfVersion(v)); !errors.Is(err, bucket.ErrPrecondition) {
			t.Errorf("put if-version %q: %v, want ErrPrecondition", v, err)
		}
		if err := b.Delete(ctx, "k", bucket.IfVersion(v)); !errors.Is(err, bucket.ErrPrecondition) {
			t.Errorf("delete if-version %q: %v, want ErrPrecondition", v, err)
		}
	}
	if got := r.total() - sent; got != 0 {
		t.Errorf("%d requests sent for impossible versions", got)
	}
	if err := b.Delete(ctx, "k", bucket.IfAbsent()); !errors.Is(err, bucket.ErrUnsupported) {
		t.Errorf("delete if-absent: %v, want ErrUnsupported", err)
	}
}

// TestFakeRefusesConditionalDelete: a bucket for fake-gcs-server refuses a
// conditional delete without sending it, rather than deleting
// unconditionally, and says why in its capabilities.
func TestFakeRefusesConditionalDelete(t *testing.T) {
	srv := fakegcstest.New(t)
	ctx := t.Context()
	b, r := newRecorded(t, srv, "fake-delete", "", gcs.Options{FakeServer: true})
	caps := b.Capabilities()
	if caps.ConditionalDelete || caps.KnownGaps["conditional-delete"] == "" {
		t.Fatalf("capabilities %+v, want no conditional delete and its known gap", caps)
	}
	a, err := b.Put(ctx, "k", []byte("x"), bucket.Unconditional)
	if err != nil {
		t.Fatal(err)
	}
	sent := r.total()
	if err := b.Delete(ctx, "k", bucket.IfVersion(a.Version)); !errors.Is(err, bucket.ErrUnsupported) {
		t.Fatalf("conditional delete on the fake: %v, want ErrUnsupported", err)
	}
	if got := r.total() - sent; got != 0 {
		t.Errorf("%d requests sent for a refused delete", got)
	}
	if _, err := b.Stat(ctx, "k"); err != nil {
		t.Fatalf("object after a refused delete: %v", err)
	}
}

// TestReadWithoutLastModified: if a server sends no Last-Modified with a
// body, Get asks for the generation's metadata instead.
func TestReadWithoutLastModified(t *testing.T) {
	srv := fakegcstest.New(t)
	ctx := t.Context()
	b, r := newRecorded(t, srv, "no-last-modified", "", gcs.Options{})
	p, err := b.Put(ctx, "k", []byte("x"), bucket.Unconditional)
	if err != nil {
		t.Fatal(err)
	}
	r.setHook(func(req *http.Request, forward func() (*http.Response, error)) (*http.Response, error) {
		if kind(req) != "media" {
			return nil, nil
		}
		resp, err := forward()
		if err == nil {
			resp.Header.Del("Last-Modified")
		}
		return resp, err
	})
	_, g, err := b.Get(ctx, "k")
	if err != nil {
		t.Fatal(err)
	}
	if !g.ModTime.Equal(p.ModTime) || g.Version != p.Version {
		t.Fatalf("get attrs %+v, put gave %+v", g, p)
	}
	if r.count("stat") != 1 {
		t.Fatalf("%d metadata requests, want 1", r.count("stat"))
	}
}

// cutBody yields its first n bytes, then fails as a reset connection.
type cutBody struct {
	r io.Reader
	n int
}

func (c *cutBody) Read(p []byte) (int, error) {
	if c.n == 0 {
		return 0, errReset
	}
	p = p[:min(len(p), c.n)]
	n, err := c.r.Read(p)
	c.n -= n
	return n, err
}

func (c *cutBody) Close() error { return nil }

// TestReplacedDuringReadIsNotMissing: the connection of a read breaks
// mid-body and the object is overwritten before the client's retry, which
// asks for the generation it began with and is told 404. The object was
// never missing: the read must fail as unavailable (worth a retry), never
// as ErrNotExist, or a head read racing its own next write would take the
// head for lost.
func TestReplacedDuringReadIsNotMissing(t *testing.T) {
	srv := fakegcstest.New(t)
	ctx := t.Context()
	b, r := newRecorded(t, srv, "replaced", "", gcs.Options{ReadAttempts: 3})
	if _, err := b.Put(ctx, "k", bytes.Repeat([]byte("a"), 4096), bucket.Unconditional); err != nil {
		t.Fatal(err)
	}
	var cut sync.Once
	r.setHook(func(req *http.Request, forward func() (*http.Response, error)) (*http.Response, error) {
		if kind(req) != "media" {
			return nil, nil
		}
		resp, err := forward()
		if err != nil || resp.StatusCode != http.StatusOK {
			return resp, err
		}
		cut.Do(func() {
			// The next version lands while the first is being read.
			r.setHook(nil)
			if _, err := b.Put(ctx, "k", bytes.Repeat([]byte("b"), 4096), bucket.Unconditional); err != nil {
				t.Error(err)
			}
			resp.Body = &cutBody{r: resp.Body, n: 100}
		})
		return resp, nil
	})
	body, _, err := b.Get(ctx, "k")
	if errors.Is(err, bucket.ErrNotExist) {
		t.Fatalf("a read that raced an overwrite reported the object missing: %v", err)
	}
	if err == nil {
		if len(body) != 4096 || (body[0] != 'a' && body[0] != 'b') || body[0] != body[4095] {
			t.Fatalf("a read that raced an overwrite returned a torn body: %q...%q", body[:8], body[len(body)-8:])
		}
		return
	}
	if !errors.Is(err, bucket.ErrUnavailable) {
		t.Fatalf("a read that raced an overwrite: %v, want ErrUnavailable", err)
	}
	if got := r.count("media"); got < 2 {
		t.Fatalf("%d media requests: the client did not retry the broken read", got)
	}
}
