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

// TestSnapshotRequestCounts: what a mint and a frozen read of a
// 1,000-file workbench cost in requests, rounds and bytes, at 3 ms per
// request so that requests sent together count as one round. A mint
// writes one commit (a delta segment, a root, the head) whatever the
// workbench holds: it records a hold on the root, it copies nothing. A
// frozen read costs what the live read costs plus the fetch of the held
// root's objects the process has not cached, and writes nothing.
// docs/performance.md records the figures.
func TestSnapshotRequestCounts(t *testing.T) {
	store := mem.NewStore()
	wb, _ := mem.New(store, "")
	clk := &fakeClock{}
	clk.set(t0)
	w := newServiceOn(t, wb, workbench.Options{Now: clk.Now, Engine: head.Options{MaxDeltaBytes: 1}})
	var files []workbench.SeedFile
	for i := range 1000 {
		files = append(files, workbench.SeedFile{Path: fmt.Sprintf("outputs/f%04d.txt", i), Body: []byte(fmt.Sprintf("line of file %d\n", i))})
	}
	workbench.SeedFilesForTest(t, w, "wb", files...)
	commitWorkbench(t, w, "wb")

	ctx := context.Background()
	open := func() (*workbench.Service, *counting.Bucket) {
		mb, _ := mem.New(store, "")
		cb := counting.New(latency.New(mb, latency.Options{PerRequest: 3 * time.Millisecond}))
		s, err := workbench.Open(ctx, cb, workbench.Options{AgentID: "test", Now: clk.Now})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s, cb
	}
	run := func(s *workbench.Service, cb *counting.Bucket, what, tool, in string) (counting.Stats, map[string]any) {
		t.Helper()
		cb.Reset()
		r, ok := call(t, s, tool, in)
		if !ok {
			t.Fatalf("%s: %v", what, r)
		}
		st := cb.Snapshot()
		t.Logf("%s: %d requests (%d GET, %d PUT) in %d rounds, %d bytes read, %d bytes written",
			what, st.Total().Requests, st.Get.Requests, st.Put.Requests, st.Rounds, st.Get.BytesRead, st.Put.BytesWritten)
		return st, r
	}

	// A mint by a process that has served the workbench before.
	s, cb := open()
	mustCall(t, s, "workbench_stat", `{"id":"wb"}`)
	st, r := run(s, cb, "mint, warm process", "workbench_snapshot", `{"id":"wb","name":"n"}`)
	if st.Put.Requests > 3 || st.Rounds > 6 || st.Put.BytesWritten > 4<<10 {
		t.Errorf("mint: %+v; want at most 3 PUTs (delta, root, head), 6 rounds, 4 KiB written", st)
	}
	id := r["snapshot_id"]
	run(s, cb, "renew, warm process", "workbench_snapshot_renew", `{"id":"wb","name":"n","ttl_days":30}`)
	st, _ = run(s, cb, "snapshot list, warm process", "workbench_snapshot_list", `{"id":"wb"}`)
	if st.Put.Requests != 0 {
		t.Errorf("a list with nothing to reap wrote: %+v", st)
	}

	// Writes after the snapshot, so that live and frozen differ.
	putFiles(t, s, "wb", workbench.SeedFile{Path: "outputs/f0000-new.txt", Body: []byte("new")})

	const page = `{"id":"wb","section":"outputs","limit":100}`
	frozenPage := fmt.Sprintf(`{"id":"wb","section":"outputs","limit":100,"at_snapshot":%v}`, id)
	const stat = `{"id":"wb","section":"outputs","path":"f0500.txt"}`
	frozenStat := fmt.Sprintf(`{"id":"wb","section":"outputs","path":"f0500.txt","at_snapshot":%v}`, id)
	const frozenRead = `{"id":"wb","section":"outputs","path":"f0500.txt","at_snapshot":"n"}`

	// New processes: the live reads, then the frozen ones.
	s, cb = open()
	liveList, _ := run(s, cb, "live list page, new process", "workbench_list", page)
	s, cb = open()
	coldList, r := run(s, cb, "frozen list page, new process", "workbench_list", frozenPage)
	if n := len(r["entries"].([]any)); n != 100 || entryNames(t, r)[0] != "f0000.txt" || entryNames(t, r)[1] != "f0001.txt" {
		t.Fatalf("frozen page: %v", entryNames(t, r)[:3])
	}
	warmList, _ := run(s, cb, "frozen list page again", "workbench_list", frozenPage)
	s, cb = open()
	liveStat, _ := run(s, cb, "live stat, new process", "workbench_stat", stat)
	run(s, cb, "live read, same process", "workbench_read", `{"id":"wb","section":"outputs","path":"f0500.txt"}`)
	s, cb = open()
	coldStat, _ := run(s, cb, "frozen stat, new process", "workbench_stat", frozenStat)
	warmRead, _ := run(s, cb, "frozen read by name, same process", "workbench_read", frozenRead)
	for what, st := range map[string]counting.Stats{"frozen list": coldList, "frozen list again": warmList, "frozen stat": coldStat, "frozen read": warmRead} {
		if st.Put.Requests+st.Delete.Requests != 0 {
			t.Errorf("%s wrote: %+v", what, st)
		}
	}
	// The frozen root's tables and shards are the live root's where no
	// write touched them; what differs is fetched once more.
	if coldList.Rounds > liveList.Rounds+2 {
		t.Errorf("frozen list %d rounds, live %d: want at most 2 more (the held root, its tables)", coldList.Rounds, liveList.Rounds)
	}
	if coldStat.Rounds > liveStat.Rounds+2 {
		t.Errorf("frozen stat %d rounds, live %d: want at most 2 more (the held root, its tables)", coldStat.Rounds, liveStat.Rounds)
	}
	if warmList.Get.BytesRead >= coldList.Get.BytesRead {
		t.Errorf("a warm frozen list read %d bytes, the cold one %d", warmList.Get.BytesRead, coldList.Get.BytesRead)
	}
}
