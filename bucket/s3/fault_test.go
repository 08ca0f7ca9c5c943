package s3_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/cairnstore/cairn/bucket"
	"github.com/cairnstore/cairn/bucket/s3"
)

// sentinels are the port's typed errors; a classified error matches
// exactly one of them (or none).
var sentinels = []error{
	bucket.ErrNotExist, bucket.ErrPrecondition, bucket.ErrThrottled, bucket.ErrUnavailable,
	bucket.ErrAmbiguous, bucket.ErrIntegrity, bucket.ErrInvalidKey, bucket.ErrUnsupported, bucket.ErrNoBucket, bucket.ErrDenied,
}

// wantSentinel fails t unless err matches want and no other sentinel. A nil
// want means err must be non-nil and match none.
func wantSentinel(t *testing.T, what string, err, want error) {
	t.Helper()
	if err == nil {
		t.Fatalf("%s: no error, want %v", what, want)
	}
	for _, s := range sentinels {
		if got := errors.Is(err, s); got != (s == want) {
			t.Fatalf("%s: errors.Is(err, %q) = %v; err = %v", what, s, got, err)
		}
	}
}

// faultStore is a gofakes3 server reached through a RoundTripper that lets
// a test intercept requests. Requests the intercept declines are forwarded.
type faultStore struct {
	t         *testing.T
	endpoint  string
	intercept atomic.Pointer[func(*http.Request) (*http.Response, error)]
	sent      atomic.Int64 // requests that reached the RoundTripper
}

func newFaultStore(t *testing.T) *faultStore {
	return &faultStore{t: t, endpoint: newGofakes3(t).URL}
}

func (f *faultStore) RoundTrip(r *http.Request) (*http.Response, error) {
	f.sent.Add(1)
	if fn := f.intercept.Load(); fn != nil {
		return (*fn)(r)
	}
	return http.DefaultTransport.RoundTrip(r)
}

// on sets the intercept for requests that match; others are forwarded.
func (f *faultStore) on(match func(*http.Request) bool, fn func(*http.Request) (*http.Response, error)) {
	h := func(r *http.Request) (*http.Response, error) {
		if match(r) {
			return fn(r)
		}
		return http.DefaultTransport.RoundTrip(r)
	}
	f.intercept.Store(&h)
	f.sent.Store(0)
}

// bucket returns an adapter over a fresh bucket of the store, through a
// client that makes up to attempts attempts (0: the SDK's default, 3).
func (f *faultStore) bucket(attempts int) *s3.Bucket {
	f.t.Helper()
	client := newClient(f.endpoint, &http.Client{Transport: f}, attempts)
	name, err := createBucket(f.t.Context(), client)
	if err != nil {
		f.t.Fatal(err)
	}
	b, err := s3.New(client, name, "", s3.Options{})
	if err != nil {
		f.t.Fatal(err)
	}
	return b
}

// conditional matches a request that carries If-Match or If-None-Match.
func conditional(r *http.Request) bool {
	return r.Header.Get("If-Match") != "" || r.Header.Get("If-None-Match") != ""
}

func method(m string) func(*http.Request) bool {
	return func(r *http.Request) bool { return r.Method == m }
}

// s3Error is an S3 error response with the given status and code.
func s3Error(r *http.Request, status int, code string) *http.Response {
	body := ""
	if r.Method != http.MethodHead && code != "" {
		body = fmt.Sprintf(`<?xml version="1.0" encoding="UTF-8"?>`+"\n"+
			`<Error><Code>%s</Code><Message>injected by the test</Message><RequestId>TEST</RequestId></Error>`, code)
	}
	return &http.Response{
		Status:        fmt.Sprintf("%d %s", status, http.StatusText(status)),
		StatusCode:    status,
		Proto:         "HTTP/1.1",
		ProtoMajor:    1,
		ProtoMinor:    1,
		Header:        http.Header{"Content-Type": {"application/xml"}},
		Body:          io.NopCloser(strings.NewReader(body)),
		ContentLength: int64(len(body)),
		Request:       r,
	}
}

// forwardThen sends the request to the store, discards its answer and
// returns what fail returns instead: the write lands, its answer is lost.
func forwardThen(fail func(*http.Request) (*http.Response, error)) func(*http.Request) (*http.Response, error) {
	return func(r *http.Request) (*http.Response, error) {
		resp, err := http.DefaultTransport.RoundTrip(r)
		if err != nil {
			return nil, err
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return fail(r)
	}
}

func answer(status int, code string) func(*http.Request) (*http.Response, error) {
	return func(r *http.Request) (*http.Response, error) { return s3Error(r, status, code), nil }
}

// TestLostAnswerToConditionalWrite: a conditional write that lands but
// whose answer is a 503 (or a reset connection) is ErrAmbiguous after
// exactly one request, although the client would retry other calls. A
// retry would have been refused with 412 and reported a lost race.
func TestLostAnswerToConditionalWrite(t *testing.T) {
	f := newFaultStore(t)
	ctx := t.Context()
	failures := map[string]func(*http.Request) (*http.Response, error){
		"503": answer(http.StatusServiceUnavailable, "ServiceUnavailable"),
		"500": answer(http.StatusInternalServerError, "InternalError"),
		"reset": func(*http.Request) (*http.Response, error) {
			return nil, &net.OpError{Op: "read", Net: "tcp", Err: syscall.ECONNRESET}
		},
	}
	for name, fail := range failures {
		t.Run(name, func(t *testing.T) {
			b := f.bucket(0)
			base, err := b.Put(ctx, "head", []byte("v1"), bucket.Unconditional)
			if err != nil {
				t.Fatal(err)
			}
			f.on(conditional, forwardThen(fail))

			_, err = b.Put(ctx, "head", []byte("v2"), bucket.IfVersion(base.Version))
			wantSentinel(t, "put if-version", err, bucket.ErrAmbiguous)
			if got := f.sent.Load(); got != 1 {
				t.Fatalf("put if-version sent %d requests, want 1", got)
			}
			_, err = b.Put(ctx, "new", []byte("created"), bucket.IfAbsent())
			wantSentinel(t, "put if-absent", err, bucket.ErrAmbiguous)
			if got := f.sent.Load(); got != 2 {
				t.Fatalf("put if-absent sent %d requests, want 1", got-1)
			}
			// Both writes landed.
			for key, want := range map[string]string{"head": "v2", "new": "created"} {
				body, _, err := b.Get(ctx, key)
				if err != nil || string(body) != want {
					t.Fatalf("get %q = %q, %v; want %q (the write landed)", key, body, err, want)
				}
			}

			cur, err := b.Stat(ctx, "head")
			if err != nil {
				t.Fatal(err)
			}
			f.sent.Store(0)
			err = b.Delete(ctx, "head", bucket.IfVersion(cur.Version))
			wantSentinel(t, "delete if-version", err, bucket.ErrAmbiguous)
			if got := f.sent.Load(); got != 1 {
				t.Fatalf("delete if-version sent %d requests, want 1", got)
			}
			f.intercept.Store(nil)
			if _, err := b.Stat(ctx, "head"); !errors.Is(err, bucket.ErrNotExist) {
				t.Fatalf("stat after the ambiguous delete: %v, want ErrNotExist (the delete landed)", err)
			}
		})
	}
}

// TestConditionalWriteAnswers maps each answer a store can give to a
// conditional write, after exactly one request.
func TestConditionalWriteAnswers(t *testing.T) {
	f := newFaultStore(t)
	ctx := t.Context()
	cases := []struct {
		name   string
		status int
		code   string
		cond   string // "absent" or "version"
		want   error
	}{
		{"412 PreconditionFailed", 412, "PreconditionFailed", "version", bucket.ErrPrecondition},
		{"409 ConditionalRequestConflict", 409, "ConditionalRequestConflict", "version", bucket.ErrPrecondition},
		{"409 ConditionalRequestConflict on create", 409, "ConditionalRequestConflict", "absent", bucket.ErrPrecondition},
		{"404 NoSuchKey on if-match", 404, "NoSuchKey", "version", bucket.ErrPrecondition},
		{"404 NoSuchBucket on if-match", 404, "NoSuchBucket", "version", bucket.ErrNoBucket},
		{"503 SlowDown", 503, "SlowDown", "version", bucket.ErrThrottled},
		{"429", 429, "TooManyRequests", "absent", bucket.ErrThrottled},
		{"501 NotImplemented on if-none-match", 501, "NotImplemented", "absent", bucket.ErrUnsupported},
		{"501 NotImplemented on if-match", 501, "NotImplemented", "version", bucket.ErrUnsupported},
		{"500 InternalError", 500, "InternalError", "absent", bucket.ErrAmbiguous},
		{"502 no body", 502, "", "version", bucket.ErrAmbiguous},
		{"400 BadDigest", 400, "BadDigest", "absent", bucket.ErrIntegrity},
		{"403 AccessDenied", 403, "AccessDenied", "absent", bucket.ErrDenied},
	}
	b := f.bucket(0)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f.on(conditional, answer(c.status, c.code))
			cond := bucket.IfAbsent()
			if c.cond == "version" {
				cond = bucket.IfVersion(`"0123456789abcdef0123456789abcdef"`)
			}
			a, err := b.Put(ctx, "k", []byte("x"), cond)
			wantSentinel(t, "put "+cond.String(), err, c.want)
			if a != (bucket.Attrs{}) {
				t.Fatalf("failed put returned attrs %+v", a)
			}
			if got := f.sent.Load(); got != 1 {
				t.Fatalf("sent %d requests, want 1", got)
			}
			if c.status == 501 && !strings.Contains(err.Error(), "conditional writes") {
				t.Fatalf("501 error %q does not say the store lacks conditional writes", err)
			}
		})
	}
}

// TestReadAndPlainWriteAnswers maps answers to reads and unconditional
// writes. The client makes one attempt so that the SDK's retries (which
// these calls allow) do not slow the test.
func TestReadAndPlainWriteAnswers(t *testing.T) {
	f := newFaultStore(t)
	ctx := t.Context()
	b := f.bucket(1)
	get := func() error { _, _, err := b.Get(ctx, "k"); return err }
	stat := func() error { _, err := b.Stat(ctx, "k"); return err }
	list := func() error { _, err := b.List(ctx, bucket.ListOptions{}); return err }
	put := func() error { _, err := b.Put(ctx, "k", []byte("x"), bucket.Unconditional); return err }
	del := func() error { return b.Delete(ctx, "k", bucket.Unconditional) }
	cases := []struct {
		name   string
		method string
		status int
		code   string
		call   func() error
		want   error
	}{
		{"get 404 NoSuchKey", "GET", 404, "NoSuchKey", get, bucket.ErrNotExist},
		{"get 404 NoSuchBucket", "GET", 404, "NoSuchBucket", get, bucket.ErrNoBucket},
		{"list 404 NoSuchBucket", "GET", 404, "NoSuchBucket", list, bucket.ErrNoBucket},
		{"list 403", "GET", 403, "AccessDenied", list, bucket.ErrDenied},
		{"stat 404", "HEAD", 404, "", stat, bucket.ErrNotExist},
		{"get 503 SlowDown", "GET", 503, "SlowDown", get, bucket.ErrThrottled},
		{"stat 503", "HEAD", 503, "", stat, bucket.ErrUnavailable},
		{"get 429", "GET", 429, "TooManyRequests", get, bucket.ErrThrottled},
		{"get 500", "GET", 500, "InternalError", get, bucket.ErrUnavailable},
		{"list 503 SlowDown", "GET", 503, "SlowDown", list, bucket.ErrThrottled},
		{"list 500", "GET", 500, "InternalError", list, bucket.ErrUnavailable},
		{"put 500", "PUT", 500, "InternalError", put, bucket.ErrAmbiguous},
		{"put 503 SlowDown", "PUT", 503, "SlowDown", put, bucket.ErrThrottled},
		{"put 501", "PUT", 501, "NotImplemented", put, bucket.ErrUnsupported},
		{"delete 500", "DELETE", 500, "InternalError", del, bucket.ErrAmbiguous},
		{"delete 403", "DELETE", 403, "AccessDenied", del, bucket.ErrDenied},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f.on(method(c.method), answer(c.status, c.code))
			wantSentinel(t, c.name, c.call(), c.want)
		})
	}
	t.Run("delete 404 NoSuchKey", func(t *testing.T) {
		f.on(method("DELETE"), answer(404, "NoSuchKey"))
		if err := del(); err != nil {
			t.Fatalf("unconditional delete answered 404 NoSuchKey: %v, want nil", err)
		}
	})
}

// TestTransportFailures: a request that cannot connect is ErrUnavailable
// where nothing can have landed, and ErrAmbiguous for a write the SDK may
// have retried after an attempt that landed.
func TestTransportFailures(t *testing.T) {
	ctx := t.Context()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := "http://" + l.Addr().String()
	l.Close() // nothing listens there now: connections are refused
	b, err := s3.New(newClient(dead, nil, 1), "nobucket", "", s3.Options{})
	if err != nil {
		t.Fatal(err)
	}
	_, _, err = b.Get(ctx, "k")
	wantSentinel(t, "get", err, bucket.ErrUnavailable)
	_, err = b.List(ctx, bucket.ListOptions{})
	wantSentinel(t, "list", err, bucket.ErrUnavailable)
	_, err = b.Put(ctx, "k", []byte("x"), bucket.IfAbsent())
	wantSentinel(t, "put if-absent", err, bucket.ErrUnavailable)
	err = b.Delete(ctx, "k", bucket.IfVersion(`"x"`))
	wantSentinel(t, "delete if-version", err, bucket.ErrUnavailable)
	_, err = b.Put(ctx, "k", []byte("x"), bucket.Unconditional)
	wantSentinel(t, "put", err, bucket.ErrAmbiguous)
}

// TestCancelDuringCall: a caller's cancellation stays recognisable; a
// write cancelled after it was sent is also ErrAmbiguous, a read is not.
func TestCancelDuringCall(t *testing.T) {
	f := newFaultStore(t)
	b := f.bucket(0)
	if _, err := b.Put(t.Context(), "k", []byte("x"), bucket.Unconditional); err != nil {
		t.Fatal(err)
	}
	var cancel context.CancelFunc
	cancelThen := func(forward bool) func(*http.Request) (*http.Response, error) {
		return func(r *http.Request) (*http.Response, error) {
			if forward {
				if resp, err := http.DefaultTransport.RoundTrip(r); err == nil {
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
				}
			}
			cancel()
			return nil, r.Context().Err()
		}
	}

	ctx, c := context.WithCancel(t.Context())
	cancel = c
	f.on(conditional, cancelThen(true))
	_, err := b.Put(ctx, "k", []byte("y"), bucket.IfAbsent())
	if !errors.Is(err, context.Canceled) || !errors.Is(err, bucket.ErrAmbiguous) {
		t.Fatalf("conditional put cancelled in flight: %v, want context.Canceled and ErrAmbiguous", err)
	}

	ctx, c = context.WithCancel(t.Context())
	cancel = c
	f.on(method("GET"), cancelThen(false))
	_, _, err = b.Get(ctx, "k")
	if !errors.Is(err, context.Canceled) || errors.Is(err, bucket.ErrAmbiguous) || errors.Is(err, bucket.ErrUnavailable) {
		t.Fatalf("get cancelled in flight: %v, want context.Canceled only", err)
	}

	// A context cancelled before the call sends nothing.
	f.on(func(*http.Request) bool { return true }, answer(500, "InternalError"))
	ctx, c = context.WithCancel(t.Context())
	c()
	if _, err := b.Put(ctx, "k", []byte("z"), bucket.IfAbsent()); !errors.Is(err, context.Canceled) || errors.Is(err, bucket.ErrAmbiguous) {
		t.Fatalf("put with a cancelled context: %v, want context.Canceled and not ErrAmbiguous", err)
	}
	if err := b.Delete(ctx, "k", bucket.Unconditional); !errors.Is(err, context.Canceled) {
		t.Fatalf("delete with a cancelled context: %v, want context.Canceled", err)
	}
	if got := f.sent.Load(); got != 0 {
		t.Fatalf("calls with a cancelled context sent %d requests", got)
	}
}

// TestEmptyVersion: an empty If-Match would drop out of the request and
// make the write unconditional, so IfVersion("") fails without sending.
func TestEmptyVersion(t *testing.T) {
	f := newFaultStore(t)
	ctx := t.Context()
	b := f.bucket(0)
	if _, err := b.Put(ctx, "k", []byte("x"), bucket.Unconditional); err != nil {
		t.Fatal(err)
	}
	f.sent.Store(0)
	if _, err := b.Put(ctx, "k", []byte("y"), bucket.IfVersion("")); !errors.Is(err, bucket.ErrPrecondition) {
		t.Fatalf("put if-version \"\": %v, want ErrPrecondition", err)
	}
	if err := b.Delete(ctx, "k", bucket.IfVersion("")); !errors.Is(err, bucket.ErrPrecondition) {
		t.Fatalf("delete if-version \"\": %v, want ErrPrecondition", err)
	}
	if err := b.Delete(ctx, "k", bucket.IfAbsent()); !errors.Is(err, bucket.ErrUnsupported) {
		t.Fatalf("delete if-absent: %v, want ErrUnsupported", err)
	}
	if got := f.sent.Load(); got != 0 {
		t.Fatalf("sent %d requests, want none", got)
	}
	if body, _, err := b.Get(ctx, "k"); err != nil || string(body) != "x" {
		t.Fatalf("get = %q, %v; want the object untouched", body, err)
	}
}
