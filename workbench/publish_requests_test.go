package workbench_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/cairnstore/cairn/bucket/counting"
	"github.com/cairnstore/cairn/bucket/latency"
	"github.com/cairnstore/cairn/bucket/mem"
	"github.com/cairnstore/cairn/head"
	"github.com/cairnstore/cairn/manifests/bodies"
	"github.com/cairnstore/cairn/workbench"
)

// Request costs of a publication, counted with bucket/counting over
// bucket/latency at 20 ms per request, so that requests sent together
// overlap and count as one round. docs/workbench.md's request table
// carries these figures.

// putBody publishes body at outputs/name of workbench wb as base64.
func putBody(t *testing.T, s *workbench.Service, name string, body []byte) {
	t.Helper()
	in := fmt.Sprintf(`{"id":"wb","section":"outputs","path":%q,"base64":%q}`, name, b64(body))
	if out, ok := s.Call(context.Background(), "workbench_put_file", []byte(in)); !ok {
		t.Fatalf("put %s: %s", name, out)
	}
}

func b64(b []byte) string { return base64.StdEncoding.EncodeToString(b) }

// TestPutFileRequestCounts: a warm put_file of a small body to a new path
// is the pin, the staging writes and the head: 3 rounds, 2 after the pin,
// with no ledger, no block and no delete. A body in blocks adds one round,
// the ledger beside the blocks, and no delete on the response path.
func TestPutFileRequestCounts(t *testing.T) {
	cb := counting.New(latency.New(mem.NewBucket(), latency.Options{PerRequest: 20 * time.Millisecond}))
	// Without the engine's strict Check after every commit, which reads
	// the whole store.
	s, err := workbench.Open(context.Background(), cb, workbench.Options{AgentID: "test"})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	// Warm the Service on the shards a put in outputs/ touches.
	putBody(t, s, "warm.txt", bytes.Repeat([]byte("w"), 2<<10))
	putBody(t, s, "warm.bin", bytes.Repeat([]byte("W"), 2<<20))
	workbench.FlushCleanupForTest(s)

	for _, tc := range []struct {
		name          string
		size          int
		gets, puts    int64
		rounds        int64
		ledgerAndBody int64 // PUTs that are not the engine's
	}{
		// 1 head GET; the commit's delta segment, the root and the head.
		{"2 KiB", 2 << 10, 1, 3, 3, 0},
		// The same, and the ledger and the one block in one round.
		{"2 MiB", 2 << 20, 1, 5, 4, 2},
	} {
		body := bytes.Repeat([]byte{'a' + byte(tc.size%26)}, tc.size)
		cb.Reset()
		putBody(t, s, "new-"+tc.name, body)
		st := cb.Snapshot()
		t.Logf("warm put_file of %s to a new path: %d GETs, %d PUTs, %d DELETEs in %d rounds, %d bytes written",
			tc.name, st.Get.Requests, st.Put.Requests, st.Delete.Requests, st.Rounds, st.Put.BytesWritten)
		if st.Get.Requests != tc.gets || st.Put.Requests != tc.puts || st.Delete.Requests != 0 || st.Total().Requests != tc.gets+tc.puts {
			t.Errorf("%s: %+v, want %d GETs and %d PUTs only", tc.name, st, tc.gets, tc.puts)
		}
		if st.Rounds != tc.rounds {
			t.Errorf("%s: %d rounds, want %d", tc.name, st.Rounds, tc.rounds)
		}
	}
}

// TestLedgerCleanupNeverLeaks: on a store that allows one write per second
// to one object, the ledger of a landed publication is deleted in the
// background once past that budget; and one still queued when the Service
// closes is deleted by Close, retried when throttled. No ledger is left.
func TestLedgerCleanupNeverLeaks(t *testing.T) {
	if testing.Short() {
		t.Skip("waits for the store's write budget")
	}
	lb := latency.New(mem.NewBucket(), latency.Options{PerRequest: time.Millisecond, WritesPerSecondPerObject: 1})
	b := counting.New(lb)
	s, err := workbench.Open(context.Background(), b, workbench.Options{AgentID: "test"})
	if err != nil {
		t.Fatal(err)
	}
	prefix := bodies.StagingPrefix(s.Store().Layout())
	body := bytes.Repeat([]byte("x"), 64<<10)
	putBody(t, s, "a.bin", body)
	if keys := listKeys(t, b, prefix); len(keys) != 1 {
		t.Fatalf("right after the put: ledgers %v, want its own", keys)
	}
	// In the background, past the budget.
	deadline := time.Now().Add(10 * time.Second)
	for len(listKeys(t, b, prefix)) != 0 {
		if time.Now().After(deadline) {
			t.Fatal("the ledger was not deleted in the background")
		}
		time.Sleep(50 * time.Millisecond)
	}
	// A ledger still waiting for its delay when the Service closes: the
	// delete is throttled at once and tried again within Close's bound.
	putBody(t, s, "b.bin", body)
	throttled := lb.Throttled()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if keys := listKeys(t, b, prefix); len(keys) != 0 {
		t.Fatalf("ledgers left after Close: %v", keys)
	}
	t.Logf("deletes throttled while closing: %d", lb.Throttled()-throttled)
}

// TestColdReadFetchesFirstBlockWithManifest: a cold read of a body in one
// block fetches the block in the same round as its manifest rows, so it
// costs no more rounds than a cold read of an inline body. The writer
// folds every commit into the base shards (MaxDeltaBytes 1), where the
// manifest rows live in a shard of their own, never carried inline in the
// table (InlineBytes -1: a compressed shard of one inline body would be,
// and the inline read would save the round the comparison is about);
// rows still in a delta segment arrive with the path entry, and the block
// follows them.
func TestColdReadFetchesFirstBlockWithManifest(t *testing.T) {
	store := mem.NewStore()
	open := func(opts workbench.Options) (*workbench.Service, *counting.Bucket) {
		inner, err := mem.New(store, "")
		if err != nil {
			t.Fatal(err)
		}
		cb := counting.New(latency.New(inner, latency.Options{PerRequest: 5 * time.Millisecond}))
		return newServiceOn(t, cb, opts), cb
	}
	w, _ := open(workbench.Options{Engine: head.Options{MaxDeltaBytes: 1, InlineBytes: -1}})
	putBody(t, w, "inline.txt", bytes.Repeat([]byte("i"), 2<<10))
	putBody(t, w, "blocks.txt", bytes.Repeat([]byte("b"), 5<<10)) // over the inline threshold: one block
	rounds := map[string]int64{}
	for _, name := range []string{"inline.txt", "blocks.txt"} {
		s, cb := open(workbench.Options{})
		cb.Reset()
		in := fmt.Sprintf(`{"id":"wb","section":"outputs","path":%q}`, name)
		if out, ok := s.Call(context.Background(), "workbench_read", []byte(in)); !ok {
			t.Fatalf("read %s: %s", name, out)
		}
		st := cb.Snapshot()
		rounds[name] = st.Rounds
		t.Logf("cold read of %s: %d requests in %d rounds", name, st.Total().Requests, st.Rounds)
	}
	if rounds["blocks.txt"] > rounds["inline.txt"] {
		t.Fatalf("cold read rounds: %v; the first block should cost no round of its own", rounds)
	}
}

// TestSmallBodiesInline: a body up to the inline threshold lives in its
// one manifest row: no block object, no ledger, no StagedObject row; read,
// grep, append and edit see the same bytes, digests and sizes.
func TestSmallBodiesInline(t *testing.T) {
	b := mem.NewBucket()
	s := newServiceOn(t, b, workbench.Options{})
	mustCall(t, s, "workbench_put_file", putInput("wb", "outputs", "a.txt", `"text":"hello"`))
	st, _ := workbench.PathForTest(t, s, "wb", "outputs/a.txt")
	if len(st.Rows) != 1 || string(st.Rows[0].Inline) != "hello" || st.Rows[0].ObjectKey != "" || st.Revision.BlockCount != 1 ||
		st.Entry.BodyDigestURI != workbench.DigestURI([]byte("hello")) || st.Entry.LogicalSize != 5 {
		t.Fatalf("state %+v", st)
	}
	mustCall(t, s, "workbench_append", appendInput("wb", "outputs", "a.txt", `"text":" world"`))
	mustCall(t, s, "workbench_edit", editInput("wb", "outputs", "a.txt", "world", "there"))
	if got := workbench.BodyForTest(t, s, "wb", "outputs/a.txt"); string(got) != "hello there" {
		t.Fatalf("body %q", got)
	}
	got := mustCall(t, s, "workbench_grep", `{"id":"wb","section":"outputs","pattern":"there","recursive":true}`)
	if !strings.Contains(fmt.Sprint(got), "hello there") {
		t.Fatalf("grep: %v", got)
	}
	for _, prefix := range []string{bodies.ArtifactsPrefix(s.Store().Layout()), bodies.StagingPrefix(s.Store().Layout())} {
		if keys := listKeys(t, b, prefix); len(keys) != 0 {
			t.Fatalf("objects under %s: %v", prefix, keys)
		}
	}
	workbench.CheckReferencesForTest(t, s)
}
