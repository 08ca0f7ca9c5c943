package workbench_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/cairnstore/cairn/bucket"
	"github.com/cairnstore/cairn/bucket/mem"
	"github.com/cairnstore/cairn/workbench"
)

// getLog is a bucket that remembers the keys it was asked to Get by a
// call still running.
type getLog struct {
	bucket.Bucket
	mu   sync.Mutex
	keys map[string]int
}

func (b *getLog) Get(ctx context.Context, key string) ([]byte, bucket.Attrs, error) {
	if err := ctx.Err(); err != nil {
		// Never sent: a read ahead of a call that has ended.
		return nil, bucket.Attrs{}, err
	}
	b.mu.Lock()
	b.keys[key]++
	b.mu.Unlock()
	return b.Bucket.Get(ctx, key)
}

func (b *getLog) reset() map[string]int {
	b.mu.Lock()
	defer b.mu.Unlock()
	k := b.keys
	b.keys = map[string]int{}
	return k
}

// readRange reads bytes [off, off+limit) of path with a bytes read.
func readRange(t *testing.T, s *workbench.Service, path string, off, limit int) []byte {
	t.Helper()
	r := mustCall(t, s, "workbench_read", fmt.Sprintf(`{"id":"wb","section":"outputs","path":%q,"format":"bytes","offset":%d,"limit":%d}`, path, off, limit))
	b, err := base64.StdEncoding.DecodeString(r["bytes"].(string))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestReadBytesFetchesOnlyItsBlocks: a bytes read fetches the blocks that
// hold its range and no other, whatever the range (inside one block,
// across two, at the end, empty), and returns the body's bytes there; so
// does a read of a body whose rows have several owners (appends, inline
// deltas) and of one written with another block size.
func TestReadBytesFetchesOnlyItsBlocks(t *testing.T) {
	log := &getLog{Bucket: mem.NewBucket(), keys: map[string]int{}}
	opts := workbench.Options{BlockSize: 16, InlineMax: 4, BlockCacheBytes: -1}
	s := newServiceOn(t, log, opts)
	body := []byte(strings.Repeat("0123456789abcdefghijklmnopqrstuvwxyz", 3)) // 108 bytes: 7 blocks
	mustCall(t, s, "workbench_put_file", fmt.Sprintf(`{"id":"wb","section":"outputs","path":"a","text":%q}`, body))
	// An appended body: the base's blocks, an inline delta, a delta of blocks.
	appended := append([]byte(nil), body[:40]...)
	mustCall(t, s, "workbench_put_file", fmt.Sprintf(`{"id":"wb","section":"outputs","path":"b","text":%q}`, body[:40]))
	for _, d := range []string{"XYZ", strings.Repeat("q", 37)} {
		mustCall(t, s, "workbench_append", fmt.Sprintf(`{"id":"wb","section":"outputs","path":"b","text":%q}`, d))
		appended = append(appended, d...)
	}
	// A reader whose BlockSize differs from the writer's.
	other := newServiceOn(t, log, workbench.Options{BlockSize: 64, BlockCacheBytes: -1})

	for _, f := range []struct {
		path string
		body []byte
	}{{"a", body}, {"b", appended}} {
		st, _ := workbench.PathForTest(t, s, "wb", "outputs/"+f.path)
		for _, r := range []struct{ off, limit int }{
			{0, 1}, {3, 2}, {15, 2}, {16, 16}, {20, 40}, {39, 5}, {40, 3}, {42, 300}, {len(f.body) - 1, 300}, {len(f.body), 10},
		} {
			end := min(r.off+r.limit, len(f.body))
			var want []string
			for _, row := range st.Rows {
				if row.ObjectKey != "" && int(row.LogicalOffset) < end && int(row.LogicalOffset+row.Length) > r.off {
					want = append(want, row.ObjectKey)
				}
			}
			log.reset()
			got := readRange(t, s, f.path, r.off, r.limit)
			if !bytes.Equal(got, f.body[r.off:end]) {
				t.Fatalf("%s [%d, +%d): %q, want %q", f.path, r.off, r.limit, got, f.body[r.off:end])
			}
			fetched := log.reset()
			for _, k := range want {
				if fetched[k] != 1 {
					t.Errorf("%s [%d, +%d): block %s fetched %d times, want once", f.path, r.off, r.limit, k, fetched[k])
				}
				delete(fetched, k)
			}
			for k := range fetched {
				if strings.Contains(k, "/blocks/") {
					t.Errorf("%s [%d, +%d): fetched block %s outside the range", f.path, r.off, r.limit, k)
				}
			}
			// Another block size guesses the first block wrong, which
			// costs a GET, never a wrong answer.
			if got := readRange(t, other, f.path, r.off, r.limit); !bytes.Equal(got, f.body[r.off:end]) {
				t.Fatalf("%s [%d, +%d) with 64-byte blocks: %q, want %q", f.path, r.off, r.limit, got, f.body[r.off:end])
			}
		}
	}
}

// TestReadBytesChecksItsBlocks: a block of the range that does not match
// its manifest row fails the read (InvalidState, the integrity mapping);
// a damaged block outside the range is not read, so it does not.
func TestReadBytesChecksItsBlocks(t *testing.T) {
	b := mem.NewBucket()
	s := newServiceOn(t, b, workbench.Options{BlockSize: 16, InlineMax: -1, BlockCacheBytes: -1})
	body := strings.Repeat("0123456789abcdef", 4)
	mustCall(t, s, "workbench_put_file", fmt.Sprintf(`{"id":"wb","section":"outputs","path":"a","text":%q}`, body))
	st, _ := workbench.PathForTest(t, s, "wb", "outputs/a")
	if _, err := b.Put(t.Context(), st.Rows[2].ObjectKey, []byte(strings.Repeat("X", 16)), bucket.Unconditional); err != nil {
		t.Fatal(err)
	}
	if got := readRange(t, s, "a", 0, 32); string(got) != body[:32] {
		t.Fatalf("read %q", got)
	}
	r, ok := call(t, s, "workbench_read", `{"id":"wb","section":"outputs","path":"a","format":"bytes","offset":30,"limit":4}`)
	if ok || r["code"] != "InvalidState" {
		t.Fatalf("read of a damaged block: %v", r)
	}
}
