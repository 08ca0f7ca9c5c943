package workbench_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/cairnstore/cairn/bucket/counting"
	"github.com/cairnstore/cairn/bucket/latency"
	"github.com/cairnstore/cairn/bucket/mem"
	"github.com/cairnstore/cairn/head"
	"github.com/cairnstore/cairn/workbench"
)

// TestListRequestCounts: a direct-child listing reads one shard of
// path_current (the files) and one of path_directory (the
// subdirectories), fetched together with the workbench's marker, however
// many other directories the workbench holds. Measured on a directory of
// 1,000 files and 20 subdirectories, in a workbench with a few hundred
// files elsewhere, at 3 ms per request so that requests sent together
// count as one round.
func TestListRequestCounts(t *testing.T) {
	store := mem.NewStore()
	wb, _ := mem.New(store, "")
	// The seeding commit folds at once (MaxDeltaBytes 1), so the readers
	// below meet the steady state: the records in base shards, no delta.
	w := newServiceOn(t, wb, workbench.Options{Engine: head.Options{MaxDeltaBytes: 1}})
	var files []workbench.SeedFile
	for i := range 1000 {
		files = append(files, workbench.SeedFile{Path: fmt.Sprintf("outputs/big/f%04d.txt", i), Body: []byte("x")})
	}
	for i := range 20 {
		files = append(files, workbench.SeedFile{Path: fmt.Sprintf("outputs/big/sub%02d/a.txt", i), Body: []byte("y")})
	}
	for i := range 300 {
		files = append(files, workbench.SeedFile{Path: fmt.Sprintf("logs/run%03d/part%03d.txt", i%100, i), Body: []byte("z")})
	}
	workbench.SeedFilesForTest(t, w, "wb", files...)

	ctx := context.Background()
	open := func() (*workbench.Service, *counting.Bucket) {
		mb, _ := mem.New(store, "")
		cb := counting.New(latency.New(mb, latency.Options{PerRequest: 3 * time.Millisecond}))
		s, err := workbench.Open(ctx, cb, workbench.Options{AgentID: "test"})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s, cb
	}
	const page = `{"id":"wb","section":"outputs","path":"big","limit":100}`
	list := func(s *workbench.Service, cb *counting.Bucket, what, in string) (counting.Stats, map[string]any) {
		t.Helper()
		cb.Reset()
		r, ok := call(t, s, "workbench_list", in)
		if !ok {
			t.Fatalf("%s: %v", what, r)
		}
		st := cb.Snapshot()
		t.Logf("%s: %d requests in %d rounds, %d bytes read", what, st.Total().Requests, st.Rounds, st.Get.BytesRead)
		return st, r
	}
	check := func(what string, st counting.Stats, rounds, bytes int64) {
		t.Helper()
		if st.Rounds > rounds {
			t.Errorf("%s: %d rounds, want at most %d", what, st.Rounds, rounds)
		}
		if st.Get.BytesRead > bytes {
			t.Errorf("%s: %d bytes read, want at most %d", what, st.Get.BytesRead, bytes)
		}
		if st.Put.Requests+st.Delete.Requests != 0 {
			t.Errorf("%s: a listing wrote: %+v", what, st)
		}
	}

	// A new process: the head, the root, the tables, the shards. The
	// directory's path_current shard (about 300 KB) is over the page
	// bound, so it is a page index and then its pages: one round more.
	s, cb := open()
	st, r := list(s, cb, "cold listing of a 1,020-entry directory, new process", page)
	check("cold, new process", st, 5, 1<<20)
	if names := entryNames(t, r); len(names) != 100 || names[0] != "f0000.txt" || r["next_cursor"] == nil {
		t.Fatalf("first page: %v", names)
	}

	// The same page again: the head only.
	st, _ = list(s, cb, "warm listing", page)
	if st.Total().Requests != 1 {
		t.Errorf("warm listing: %d requests, want 1", st.Total().Requests)
	}

	// A Service that holds the root but none of the directory's shards.
	s, cb = open()
	if out, ok := s.Call(ctx, "workbench_stat", []byte(`{"id":"wb"}`)); !ok {
		t.Fatal(string(out))
	}
	st, _ = list(s, cb, "listing with the root held, cold shards", page)
	check("root held, cold shards", st, 3, 1<<20)

	// Every page, to the end: the last holds the 20 subdirectories after
	// the files, and each page after the first is the head only.
	var all []string
	cursor := "null"
	for pages := 0; ; pages++ {
		in := fmt.Sprintf(`{"id":"wb","section":"outputs","path":"big","limit":100,"cursor":%s}`, cursor)
		st, r := list(s, cb, fmt.Sprintf("page %d", pages+1), in)
		if pages > 0 && st.Total().Requests != 1 {
			t.Errorf("page %d: %d requests, want 1", pages+1, st.Total().Requests)
		}
		all = append(all, entryNames(t, r)...)
		if r["next_cursor"] == nil {
			break
		}
		cursor = fmt.Sprintf("%q", r["next_cursor"])
	}
	if len(all) != 1020 || all[999] != "f0999.txt" || all[1000] != "sub00" || all[1019] != "sub19" {
		t.Fatalf("%d entries: ... %v", len(all), all[max(0, len(all)-25):])
	}
}
