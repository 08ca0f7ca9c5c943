package serve_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cairnstore/cairn/bucket"
	"github.com/cairnstore/cairn/bucket/fault"
	"github.com/cairnstore/cairn/bucket/mem"
	"github.com/cairnstore/cairn/cmd/cairn/internal/serve"
)

// fileOf reads outputs/log.txt of wb1 through h: its text lines joined
// and its generation.
func fileOf(t *testing.T, h http.Handler) (string, float64) {
	t.Helper()
	got := post(t, h, "a1", "workbench_read", `{"id":"wb1","section":"outputs","path":"log.txt"}`)
	var r struct {
		Generation float64
		Items      []struct{ Value string }
	}
	if err := json.Unmarshal(got.body, &r); err != nil || got.status != 200 {
		t.Fatalf("read: %d %s", got.status, got.body)
	}
	var text string
	for _, it := range r.Items {
		text += it.Value + "\n"
	}
	return text, r.Generation
}

// setup creates wb1 with outputs/log.txt holding "a\n".
func setup(t *testing.T, h http.Handler) {
	t.Helper()
	if got := post(t, h, "a1", "workbench_create", `{"id":"wb1"}`); got.status != 200 {
		t.Fatalf("create: %d %s", got.status, got.body)
	}
	if got := post(t, h, "a1", "workbench_put_file", `{"id":"wb1","section":"outputs","path":"log.txt","text":"a\n"}`); got.status != 200 {
		t.Fatalf("put: %d %s", got.status, got.body)
	}
}

const appendB = `{"id":"wb1","section":"outputs","path":"log.txt","text":"b\n"}`

// TestIdempotentRetryReplays: a retry with the same key answers the same
// bytes and does not append again; the key with another input is 422; a
// second server on the bucket replays the first one's result.
func TestIdempotentRetryReplays(t *testing.T) {
	b := mem.NewBucket()
	h := newServer(t, b, serve.Options{}).Handler()
	setup(t, h)
	first := post(t, h, "a1", "workbench_append", appendB, "Idempotency-Key", "k1")
	if first.status != 200 || first.header.Get("Idempotent-Replayed") != "" {
		t.Fatalf("first: %d %v %s", first.status, first.header, first.body)
	}
	again := post(t, h, "a1", "workbench_append", appendB, "Idempotency-Key", "k1")
	if again.status != 200 || !bytes.Equal(again.body, first.body) || again.header.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("retry: %d %v\n%s\nwant\n%s", again.status, again.header, again.body, first.body)
	}
	if text, gen := fileOf(t, h); text != "a\nb\n" || gen != 2 {
		t.Fatalf("after the retry: %q generation %v", text, gen)
	}

	other := post(t, h, "a1", "workbench_append", `{"id":"wb1","section":"outputs","path":"log.txt","text":"c\n"}`, "Idempotency-Key", "k1")
	if other.status != 422 || code(t, other.body) != serve.CodeIdempotencyKeyReused {
		t.Fatalf("same key, other input: %d %s", other.status, other.body)
	}
	otherTool := post(t, h, "a1", "workbench_put_file", appendB, "Idempotency-Key", "k1")
	if otherTool.status != 422 {
		t.Fatalf("same key, other tool: %d %s", otherTool.status, otherTool.body)
	}
	// Keys belong to an agent: a1's key means nothing to a2.
	if got := post(t, h, "a2", "workbench_create", `{"id":"wb1"}`, "Idempotency-Key", "k1"); got.status != 200 {
		t.Fatalf("a2 with a1's key: %d %s", got.status, got.body)
	}

	// Another replica on the same bucket replays the stored result.
	h2 := newServer(t, b, serve.Options{}).Handler()
	replica := post(t, h2, "a1", "workbench_append", appendB, "Idempotency-Key", "k1")
	if replica.status != 200 || !bytes.Equal(replica.body, first.body) {
		t.Fatalf("replica: %d %s", replica.status, replica.body)
	}
	if text, _ := fileOf(t, h2); text != "a\nb\n" {
		t.Fatalf("after the replica's retry: %q", text)
	}

	// A stored error is replayed with its status.
	miss := `{"id":"wb1","section":"outputs","path":"none.txt"}`
	e1 := post(t, h, "a1", "workbench_read", miss, "Idempotency-Key", "k2")
	e2 := post(t, h2, "a1", "workbench_read", miss, "Idempotency-Key", "k2")
	if e1.status != 404 || e2.status != 404 || !bytes.Equal(e1.body, e2.body) || e2.header.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("stored error: %d %s / %d %v %s", e1.status, e1.body, e2.status, e2.header, e2.body)
	}

	if got := post(t, h, "a1", "workbench_read", miss, "Idempotency-Key", "bad\x01key"); got.status != 400 {
		t.Fatalf("control byte in the key: %d %s", got.status, got.body)
	}
}

// TestIdempotentCrashAppliesOnce: the first try commits its append but
// never stores its result (the server died). A retry within the lease is
// told the key is in use; after it, another replica takes the key over,
// runs the call again under the same engine request ids, and the engine
// replays the append instead of applying it twice.
func TestIdempotentCrashAppliesOnce(t *testing.T) {
	fb := fault.New(mem.NewBucket())
	var clock atomic.Int64
	clock.Store(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano())
	opts := serve.Options{
		IdempotencyLease: time.Minute,
		Now:              func() time.Time { return time.Unix(0, clock.Load()) },
	}
	h := newServer(t, fb, opts).Handler()
	setup(t, h)

	// The first write under idempotency/ is the claim; the second, the
	// result, is lost as if the process died after the commit.
	var puts atomic.Int64
	rule := fb.Inject(fault.Rule{Op: fault.OpPut, Prefix: "idempotency/", Fault: fault.Hook(func(context.Context, fault.Op, string) error {
		if puts.Add(1) == 2 {
			return bucket.ErrUnavailable
		}
		return nil
	})})
	first := post(t, h, "a1", "workbench_append", appendB, "Idempotency-Key", "k1")
	fb.Disarm(rule)
	if first.status != 200 || puts.Load() != 2 {
		t.Fatalf("first: %d (%d record writes) %s", first.status, puts.Load(), first.body)
	}

	busy := post(t, h, "a1", "workbench_append", appendB, "Idempotency-Key", "k1")
	if busy.status != 409 || code(t, busy.body) != serve.CodeIdempotencyKeyInUse || busy.header.Get("Retry-After") == "" {
		t.Fatalf("retry within the lease: %d %v %s", busy.status, busy.header, busy.body)
	}

	clock.Add(int64(2 * time.Minute))
	h2 := newServer(t, fb, opts).Handler()
	retry := post(t, h2, "a1", "workbench_append", appendB, "Idempotency-Key", "k1")
	if retry.status != 200 || !bytes.Equal(retry.body, first.body) {
		t.Fatalf("retry after the lease: %d %s\nwant %s", retry.status, retry.body, first.body)
	}
	if text, gen := fileOf(t, h2); text != "a\nb\n" || gen != 2 {
		t.Fatalf("after the takeover: %q generation %v (applied twice?)", text, gen)
	}
	// Now stored: a third try replays without running.
	third := post(t, h, "a1", "workbench_append", appendB, "Idempotency-Key", "k1")
	if third.header.Get("Idempotent-Replayed") != "true" || !bytes.Equal(third.body, first.body) {
		t.Fatalf("third: %v %s", third.header, third.body)
	}
}

// TestIdempotentCrashCreateOnlyPut: a create-only put whose result was
// lost checks the store before its command on the retry: it answers
// AlreadyExists, and the file keeps the first try's one generation.
func TestIdempotentCrashCreateOnlyPut(t *testing.T) {
	fb := fault.New(mem.NewBucket())
	var clock atomic.Int64
	opts := serve.Options{IdempotencyLease: time.Minute, Now: func() time.Time { return time.Unix(0, clock.Load()) }}
	h := newServer(t, fb, opts).Handler()
	if got := post(t, h, "a1", "workbench_create", `{"id":"wb1"}`); got.status != 200 {
		t.Fatalf("create: %d %s", got.status, got.body)
	}
	var puts atomic.Int64
	rule := fb.Inject(fault.Rule{Op: fault.OpPut, Prefix: "idempotency/", Fault: fault.Hook(func(context.Context, fault.Op, string) error {
		if puts.Add(1) == 2 {
			return bucket.ErrUnavailable
		}
		return nil
	})})
	put := `{"id":"wb1","section":"outputs","path":"log.txt","text":"a\n"}`
	if got := post(t, h, "a1", "workbench_put_file", put, "Idempotency-Key", "p1"); got.status != 200 {
		t.Fatalf("first put: %d %s", got.status, got.body)
	}
	fb.Disarm(rule)
	clock.Add(int64(2 * time.Minute))
	retry := post(t, h, "a1", "workbench_put_file", put, "Idempotency-Key", "p1")
	if retry.status != 409 || code(t, retry.body) != "AlreadyExists" {
		t.Fatalf("retry: %d %s", retry.status, retry.body)
	}
	if text, gen := fileOf(t, h); text != "a\n" || gen != 1 {
		t.Fatalf("after the retry: %q generation %v", text, gen)
	}
}
