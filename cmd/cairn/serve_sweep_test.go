package main

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cairnstore/cairn/bucket"
	"github.com/cairnstore/cairn/bucket/file"
	"github.com/cairnstore/cairn/bucket/mem"
	"github.com/cairnstore/cairn/workbench"
)

// TestServeSweepsInTheBackground: `cairn serve` collects garbage on its
// own. An unreachable object the store stamped hours ago (a delta no root
// names) is deleted by the sweeper within a few intervals, and what the
// workbench holds stays readable.
func TestServeSweepsInTheBackground(t *testing.T) {
	dir := t.TempDir()
	base, stderr, stop := startServe(t, "--addr", "127.0.0.1:0", "--bucket", "file://"+dir, "--gc-interval", "1s")
	tools := base + "/v1/agents/a/tools/"
	if st, out := postJSON(t, tools+"workbench_create", `{"id":"w"}`); st != 200 {
		t.Fatalf("create: %d %s", st, out)
	}
	if st, out := postJSON(t, tools+"workbench_put_file", `{"id":"w","section":"outputs","path":"kept.txt","text":"kept"}`); st != 200 {
		t.Fatalf("put: %d %s", st, out)
	}

	// A stray delta: well named, reached by nothing, three hours old.
	b, err := file.New(dir)
	if err != nil {
		t.Fatal(err)
	}
	layout, err := workbench.Layout("a")
	if err != nil {
		t.Fatal(err)
	}
	stray := strings.Repeat("ab", 32)
	key := "shards/" + layout.ID().String() + "/deltas/" + stray
	if _, err := b.Put(context.Background(), key, []byte("not a delta"), bucket.Unconditional); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-3 * time.Hour)
	found := false
	filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(path, stray) {
			found = os.Chtimes(path, old, old) == nil
		}
		return nil
	})
	if !found {
		t.Fatal("the stray object's file was not found to age it")
	}

	for deadline := time.Now().Add(30 * time.Second); ; {
		_, err := b.Stat(context.Background(), key)
		if errors.Is(err, bucket.ErrNotExist) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the stray object is still there after 30 s (stat: %v); log:\n%s", err, stderr.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
	if st, out := postJSON(t, tools+"workbench_read", `{"id":"w","section":"outputs","path":"kept.txt"}`); st != 200 || !strings.Contains(out, `"kept"`) {
		t.Fatalf("read after the sweep: %d %s", st, out)
	}
	// The sweep logs its line, and counts its figures, once it has ended:
	// after the delete the loop above saw.
	for deadline := time.Now().Add(30 * time.Second); !strings.Contains(stderr.String(), `"msg":"swept"`); {
		if time.Now().After(deadline) {
			t.Fatalf("no swept line in the log 30 s after the sweep's delete:\n%s", stderr.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	// Its figures are in /metrics.
	resp, err := http.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	metrics, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{"cairn_sweeps_total", "cairn_sweep_deleted_objects_total", "cairn_sweep_deleted_bytes_total"} {
		if v := metricOf(string(metrics), want); v < 1 {
			t.Errorf("%s = %v after a sweep that deleted an object", want, v)
		}
	}
	if v := metricOf(string(metrics), "cairn_sweep_lease_held"); v != 1 {
		t.Errorf("cairn_sweep_lease_held = %v on the only replica", v)
	}
	raw, _, err := b.Get(context.Background(), sweepLeaseKey)
	var lease sweepLease
	if err != nil || json.Unmarshal(raw, &lease) != nil || lease.Holder == "" || lease.Interval != "1s" {
		t.Errorf("the sweep lease: %s, %v", raw, err)
	}
	if code := stop(); code != exitOK {
		t.Fatalf("serve exited %d", code)
	}
}

// metricOf is the value of a series without labels in a text
// exposition, or -1.
func metricOf(text, name string) float64 {
	for line := range strings.SplitSeq(text, "\n") {
		if rest, ok := strings.CutPrefix(line, name+" "); ok {
			v, err := strconv.ParseFloat(strings.TrimSpace(rest), 64)
			if err == nil {
				return v
			}
		}
	}
	return -1
}

// TestSweepLease: one replica holds the bucket's sweep lease and renews
// it at each turn; another takes it over only once it has seen the same
// version for two of the holder's intervals, and the first then yields.
func TestSweepLease(t *testing.T) {
	ctx := context.Background()
	b := mem.NewBucket()
	log := slog.New(slog.DiscardHandler)
	a, c := newSweeper(b, log, time.Minute), newSweeper(b, log, time.Second)
	if !a.take(ctx) {
		t.Fatal("the first replica did not take a lease nobody held")
	}
	if !a.take(ctx) {
		t.Fatal("the holder could not renew its lease")
	}
	if c.take(ctx) || c.take(ctx) {
		t.Fatal("another replica took a lease renewed a moment ago")
	}
	// Unchanged for longer than two of its own intervals but not two of
	// the holder's: still held.
	c.seenSince = time.Now().Add(-10 * time.Second)
	if c.take(ctx) {
		t.Fatal("a lease was taken over by the taker's interval, not the holder's")
	}
	c.seenSince = time.Now().Add(-3 * time.Minute)
	if !c.take(ctx) {
		t.Fatal("a lease unchanged for two of the holder's intervals was not taken over")
	}
	if a.take(ctx) {
		t.Fatal("the former holder swept beside the one that took over")
	}
	// A renewal by the holder restarts the count of the one waiting.
	a.seenSince = time.Now().Add(-time.Hour)
	if !c.take(ctx) {
		t.Fatal("the new holder could not renew")
	}
	if a.take(ctx) {
		t.Fatal("a lease renewed since it was last seen was taken over")
	}
}
