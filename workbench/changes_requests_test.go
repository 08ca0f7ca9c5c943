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

// TestChangesRequestCounts: the feed reads one change_event shard per
// group of 256 versions from its position on, and fetches the shards of
// up to 32 groups in one round, so a follower near the head reads one
// shard however long the log is, and a read of the whole log costs a
// round per 32 groups rather than a merge of every shard of the family.
// Measured on 600 commits (three groups) at 3 ms per request.
func TestChangesRequestCounts(t *testing.T) {
	store := mem.NewStore()
	wb, _ := mem.New(store, "")
	w := newServiceOn(t, wb, workbench.Options{Engine: head.Options{MaxDeltaBytes: 1}})
	for i := range 600 {
		putText(t, w, fmt.Sprintf("wb%d", i%3), fmt.Sprintf("f%d.txt", i%5), fmt.Sprint(i))
	}
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
	read := func(what string, s *workbench.Service, cb *counting.Bucket, req workbench.ChangesRequest) (workbench.ChangesPage, counting.Stats) {
		t.Helper()
		cb.Reset()
		page, err := s.ReadChanges(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		st := cb.Snapshot()
		t.Logf("%s: %d events, %d requests in %d rounds, %d bytes read", what, len(page.Events), st.Total().Requests, st.Rounds, st.Get.BytesRead)
		if st.Put.Requests+st.Delete.Requests != 0 {
			t.Errorf("%s: the feed wrote: %+v", what, st)
		}
		return page, st
	}

	s, cb := open()
	all, st := read("new process, the whole log", s, cb, workbench.ChangesRequest{Limit: workbench.MaxChangesLimit})
	if len(all.Events) != 600+3 || !all.CaughtUp {
		t.Fatalf("whole log: %d events, caught up %t", len(all.Events), all.CaughtUp)
	}
	if st.Rounds > 6 {
		t.Errorf("whole log: %d rounds, want at most 6", st.Rounds)
	}
	_, st = read("same process, from the caught-up cursor", s, cb, workbench.ChangesRequest{Cursor: all.NextCursor})
	if st.Total().Requests != 1 {
		t.Errorf("a caught-up follower read %d objects, want the head only", st.Total().Requests)
	}

	// A new process following from near the head: the head, the root, the
	// tables and one change_event shard (the marker shards come inline or
	// in the same rounds), whatever precedes the position.
	s2, cb2 := open()
	near := all.ReadVersion - 3
	_, st = read("new process, the last 3 versions", s2, cb2, workbench.ChangesRequest{AfterCommitVersion: &near})
	if st.Rounds > 5 || st.Total().Requests > 12 {
		t.Errorf("near the head: %d requests in %d rounds, want at most 12 in 5", st.Total().Requests, st.Rounds)
	}

	// A workbench created after all of that: its scoped feed, read from
	// the start by a new process, seeks to its creation.
	putText(t, w, "late", "a.txt", "x")
	s3, cb3 := open()
	page, st := read("new process, a late workbench's feed from the start", s3, cb3, workbench.ChangesRequest{WorkbenchID: "late"})
	if len(page.Events) != 2 || !page.CaughtUp {
		t.Fatalf("late workbench's feed: %+v", page)
	}
	if st.Rounds > 5 || st.Total().Requests > 12 {
		t.Errorf("late workbench: %d requests in %d rounds, want at most 12 in 5", st.Total().Requests, st.Rounds)
	}
}
