package workbench_test

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/cairnstore/cairn/bucket/counting"
	"github.com/cairnstore/cairn/bucket/fault"
	"github.com/cairnstore/cairn/bucket/latency"
	"github.com/cairnstore/cairn/bucket/mem"
	"github.com/cairnstore/cairn/head"
	"github.com/cairnstore/cairn/workbench"
)

// twoViews returns two views of one memory store: one for a seeder, one
// for the measured Service.
func twoViews(t *testing.T) (plain, view *mem.Bucket) {
	t.Helper()
	store := mem.NewStore()
	var err error
	if plain, err = mem.New(store, ""); err != nil {
		t.Fatal(err)
	}
	if view, err = mem.New(store, ""); err != nil {
		t.Fatal(err)
	}
	return plain, view
}

// TestCommitRequestCounts: what a commit of a workbench of 1,000 files
// costs in requests, sequential rounds and bytes written, first and
// replacing. The figures are in docs/performance.md ("Commits"); the
// bounds here only catch a change of shape (a round per file, say).
func TestCommitRequestCounts(t *testing.T) {
	// The files are seeded by another Service of the deployment over a
	// plain view of the store; the measured one starts cold.
	plain, view := twoViews(t)
	cb := counting.New(latency.New(view, latency.Options{PerRequest: 10 * time.Millisecond}))
	seeder := newServiceOn(t, plain, workbench.Options{AgentID: "test"})
	files := make([]workbench.SeedFile, 1000)
	for i := range files {
		files[i] = workbench.SeedFile{
			Path:        fmt.Sprintf("outputs/d%02d/f%04d.txt", i%20, i),
			ContentType: "text/plain",
			Body:        []byte(fmt.Sprintf("file %d\n", i)),
		}
	}
	workbench.SeedFilesForTest(t, seeder, "wb", files...)
	// The seeder is done: a fold of its deltas still running would race
	// the measured commit and add the rounds of a retry.
	seeder.Close()
	s, err := workbench.Open(context.Background(), cb, workbench.Options{AgentID: "test", BlockCacheBytes: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, tc := range []struct {
		what, input string
		maxRounds   int64
	}{
		{"first commit of 1,000 files, cold Service", commitInput("wb", `{"task":"cost"}`, digest01), 14},
		{"replacing commit of 1,000 files, warm", commitInput("wb", `{"task":"cost","n":2}`, digest01, true), 6},
		{"exact retry", commitInput("wb", `{"task":"cost","n":2}`, digest01, true), 1},
	} {
		// A fold the last call left to prepare beside the commits (a
		// large delta listed) is that call's, not this one's.
		if err := s.Store().FoldsSettled(ctx); err != nil {
			t.Fatal(err)
		}
		cb.Reset()
		res := mustCall(t, s, "workbench_commit", tc.input)
		st := cb.Snapshot()
		t.Logf("%s: %d GETs (%d bytes), %d PUTs (%d bytes), %d DELETEs in %d rounds; generation %v",
			tc.what, st.Get.Requests, st.Get.BytesRead, st.Put.Requests, st.Put.BytesWritten, st.Delete.Requests, st.Rounds, res["generation"])
		if os.Getenv("CAIRN_TEST_VALUE_FORMAT") != "2" && tc.maxRounds == 6 {
			// With member trees the first commit's delta (its 1,000
			// references and revision counts, no member rows) does not
			// fold at once, so the fold rides on this commit: it reads
			// about 300 KB of base shards (6 GETs), which takes one or
			// two rounds more depending on how they overlap the
			// command's own reads (7 or 8 under the race detector).
			tc.maxRounds += 2
			if raceDetector {
				// Under the race detector, with every package's tests
				// running at once (as CI runs them), those reads and the
				// command's overlap less still: a CI run saw 9 rounds once,
				// where 6 (7 with the race detector alone) is usual.
				tc.maxRounds++
			}
		}
		if st.Rounds > tc.maxRounds {
			t.Errorf("%s: %d rounds, want at most %d", tc.what, st.Rounds, tc.maxRounds)
		}
	}
	cb.Reset()
	res := mustCall(t, s, "workbench_find", `{"include_manifest":true}`)
	st := cb.Snapshot()
	t.Logf("find with manifests, one committed workbench: %d GETs, %d PUTs in %d rounds; %v matches", st.Get.Requests, st.Put.Requests, st.Rounds, res["match_count"])
}

// TestFindRequestCounts: a cold find over 100 workbenches, 20 of them
// committed, with and without their run manifests. Logged for
// docs/performance.md; the bound catches a round per workbench (20 or
// more), not the layout the seeder's group commits happened to leave:
// usually the warm find takes 4 rounds, but a CI run under the race
// detector, whose seeding had folded (22 GETs for the cold find where 5
// to 7 is usual), took 7: some stage then read in two steps, likely a
// page index and its page. Not traced.
func TestFindRequestCounts(t *testing.T) {
	store := mem.NewStore()
	plain, err := mem.New(store, "")
	if err != nil {
		t.Fatal(err)
	}
	view, err := mem.New(store, "")
	if err != nil {
		t.Fatal(err)
	}
	seeder := newServiceOn(t, plain, workbench.Options{AgentID: "test"})
	for i := range 100 {
		id := fmt.Sprintf("wb%03d", i)
		if i%5 == 0 {
			mustCall(t, seeder, "workbench_commit", commitInput(id, fmt.Sprintf(`{"task":"t%d"}`, i), digest01))
		} else {
			mustCall(t, seeder, "workbench_create", fmt.Sprintf(`{"id":%q}`, id))
		}
	}
	cb := counting.New(latency.New(view, latency.Options{PerRequest: 10 * time.Millisecond}))
	s, err := workbench.Open(context.Background(), cb, workbench.Options{AgentID: "test", BlockCacheBytes: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, tc := range []struct {
		what, input string
		maxRounds   int64
	}{
		{"find of 100 workbenches, cold", `{"limit":100}`, 6},
		{"find of 100 workbenches with manifests, warm", `{"limit":100,"include_manifest":true}`, 8},
		{"find of 100 workbenches with manifests, warm again", `{"limit":100,"include_manifest":true}`, 2},
	} {
		cb.Reset()
		res := mustCall(t, s, "workbench_find", tc.input)
		st := cb.Snapshot()
		t.Logf("%s: %d GETs (%d bytes) in %d rounds; %v matches", tc.what, st.Get.Requests, st.Get.BytesRead, st.Rounds, res["match_count"])
		if st.Rounds > tc.maxRounds || st.Put.Requests != 0 {
			t.Errorf("%s: %d rounds, %d PUTs; want at most %d rounds, no PUT", tc.what, st.Rounds, st.Put.Requests, tc.maxRounds)
		}
	}
}

// TestCommitRetryReadsInOneRound: a commit whose head write loses to
// another replica's fold runs again on the folded snapshot, whose base
// shards it has not read; the revisions it references are its declared
// reads, loaded in one round, not one round per shard.
func TestCommitRetryReadsInOneRound(t *testing.T) {
	ctx := context.Background()
	plain, view := twoViews(t)
	fb := fault.New(view)
	cb := counting.New(latency.New(fb, latency.Options{PerRequest: 10 * time.Millisecond}))
	// The seeder keeps its deltas (no fold of its own) until the hook.
	seeder := newServiceOn(t, plain, workbench.Options{AgentID: "test", Engine: head.Options{MaxDeltaBytes: 64 << 20}})
	files := make([]workbench.SeedFile, 1000)
	for i := range files {
		files[i] = workbench.SeedFile{Path: fmt.Sprintf("outputs/d%02d/f%04d.txt", i%20, i), ContentType: "text/plain", Body: []byte(fmt.Sprintf("file %d\n", i))}
	}
	workbench.SeedFilesForTest(t, seeder, "wb", files...)
	s, err := workbench.Open(ctx, cb, workbench.Options{AgentID: "test", BlockCacheBytes: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	// The measured commit's first head write: the seeder folds first.
	var before, after uint64
	fb.Inject(fault.Rule{Op: fault.OpPut, Key: s.Store().Layout().Head(), Count: 1, Fault: fault.Hook(func(context.Context, fault.Op, string) error {
		sn, err := seeder.Store().Pin(ctx)
		if err != nil {
			return err
		}
		before = sn.Sequence()
		if err := seeder.Store().Fold(ctx); err != nil {
			return err
		}
		if sn, err = seeder.Store().Pin(ctx); err != nil {
			return err
		}
		after = sn.Sequence()
		return nil
	})})
	cb.Reset()
	mustCall(t, s, "workbench_commit", commitInput("wb", `{"task":"retry"}`, digest01))
	st := cb.Snapshot()
	t.Logf("commit of 1,000 files after another replica's fold: %d GETs, %d PUTs in %d rounds", st.Get.Requests, st.Put.Requests, st.Rounds)
	if after <= before {
		t.Fatalf("the seeder's fold did not move the head (%d → %d): nothing raced the commit", before, after)
	}
	if max := int64(20); st.Rounds > max {
		t.Errorf("%d rounds, want at most %d", st.Rounds, max)
	}
}
