package workbench_test

import (
	"bytes"
	"context"
	"testing"

	"github.com/cairnstore/cairn/workbench"
)

// TestWithRequestIDReplays: a call repeated under the same bound request
// id, on another replica, replays the commands the first committed: an
// append applies once and the retry reports what it committed; a call
// under another id, or unbound, applies again.
func TestWithRequestIDReplays(t *testing.T) {
	_, rs := newReplicas(t, 2, workbench.Options{})
	a, b := rs[0], rs[1]
	mustCall(t, a, "workbench_create", `{"id":"wb"}`)
	mustCall(t, a, "workbench_put_file", `{"id":"wb","section":"outputs","path":"log.txt","text":"a\n"}`)
	app := []byte(`{"id":"wb","section":"outputs","path":"log.txt","text":"b\n"}`)
	ctx := context.Background()

	first, ok := a.Call(workbench.WithRequestID(ctx, "req-1"), "workbench_append", app)
	if !ok {
		t.Fatalf("first: %s", first)
	}
	again, ok := b.Call(workbench.WithRequestID(ctx, "req-1"), "workbench_append", app)
	if !ok || !bytes.Equal(again, first) {
		t.Fatalf("retry under the same id:\n%s\nwant\n%s", again, first)
	}
	read := `{"id":"wb","section":"outputs","path":"log.txt"}`
	if r := mustCall(t, b, "workbench_read", read); num(r["generation"]) != "2" || num(r["total_size_bytes"]) != "4" {
		t.Fatalf("after the retry: %v", r)
	}

	if _, ok := a.Call(workbench.WithRequestID(ctx, "req-2"), "workbench_append", app); !ok {
		t.Fatal("another id")
	}
	if _, ok := a.Call(ctx, "workbench_append", app); !ok {
		t.Fatal("unbound")
	}
	if r := mustCall(t, b, "workbench_read", read); num(r["generation"]) != "4" || num(r["total_size_bytes"]) != "8" {
		t.Fatalf("after two more appends: %v", r)
	}

	// A create under a bound id that already ran answers its success
	// without a command: the workbench exists.
	c1, ok1 := a.Call(workbench.WithRequestID(ctx, "req-3"), "workbench_create", []byte(`{"id":"wb2"}`))
	c2, ok2 := b.Call(workbench.WithRequestID(ctx, "req-3"), "workbench_create", []byte(`{"id":"wb2"}`))
	if !ok1 || !ok2 || !bytes.Equal(c1, c2) {
		t.Fatalf("create twice: %s / %s", c1, c2)
	}
}
