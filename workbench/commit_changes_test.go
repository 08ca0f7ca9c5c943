package workbench_test

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/cairnstore/cairn/bucket/latency"
	"github.com/cairnstore/cairn/bucket/mem"

	"github.com/cairnstore/cairn/workbench"
	"github.com/cairnstore/cairn/workbench/internal/nokv"
)

// TestCommitFromChanges: a commit in value format 4 builds its tree from
// the change feed since its parent, and freezes exactly the workbench's
// paths all the same. Rounds of random puts, replacements, appends and
// edits, on the workbench and on another one, each end in a commit whose
// members must equal the workbench's path rows; then puts race commits
// (so that some land in a commit's own group, after its command), and a
// quiet commit must still freeze every path. The closure and fsck
// checks run at the end; in older value formats, where commits read the
// whole workbench, the same must hold.
func TestCommitFromChanges(t *testing.T) {
	// A millisecond a request, so that commands queue behind a commit in
	// flight and land in groups of several.
	s := newServiceOn(t, latency.New(mem.NewBucket(), latency.Options{PerRequest: time.Millisecond}), workbench.Options{})
	rng := rand.New(rand.NewPCG(1, 2))
	n := 0
	commit := func() nokv.Commit {
		t.Helper()
		n++
		mustCall(t, s, "workbench_commit", commitInput("wb", fmt.Sprintf(`{"n":%d}`, n), digest01, true))
		return headCommit(t, s, "wb")
	}
	check := func(c nokv.Commit) {
		t.Helper()
		id, members := headCommitMembers(t, s, c)
		live := workbench.LiveMembersForTest(t, s, c.SourceIncarnation)
		if !reflect.DeepEqual(members, live) {
			for p := range live {
				if !reflect.DeepEqual(members[p], live[p]) {
					t.Errorf("commit %s: %s frozen as %+v, live %+v", id, p, members[p], live[p])
				}
			}
			t.Fatalf("commit %s froze %d members, the workbench has %d paths", id, len(members), len(live))
		}
	}
	exists := map[string]bool{}
	put := func(wb, section, f, text string) {
		replace := fmt.Sprintf(`"replace":%t`, exists[wb+section+f])
		mustCall(t, s, "workbench_put_file", putInput(wb, section, f, fmt.Sprintf(`"text":%q`, text), replace))
		exists[wb+section+f] = true
	}
	op := func(wb string) {
		f := fmt.Sprintf("d%d/f%02d.txt", rng.IntN(4), rng.IntN(40))
		switch rng.IntN(4) {
		case 0:
			put(wb, "outputs", f, fmt.Sprintf("v%d x", rng.Int()))
		case 1:
			mustCall(t, s, "workbench_append", appendInput(wb, "outputs", f, `"text":"more x"`))
			exists[wb+"outputs"+f] = true
		case 2:
			put(wb, "logs", f, "note x")
		default:
			put(wb, "outputs", f, "x")
			mustCall(t, s, "workbench_edit", editInput(wb, "outputs", f, "x", "y"))
		}
	}
	for range 20 {
		op("wb")
	}
	check(commit())
	before := workbench.CommitsFromChangesForTest()
	for round := range 30 {
		for range rng.IntN(5) {
			op("wb")
		}
		for range rng.IntN(3) {
			op("other")
		}
		if round%7 == 3 {
			// A commit with nothing new since its parent.
			check(commit())
		}
		check(commit())
	}
	fromChanges := workbench.CommitsFromChangesForTest() - before
	switch v := workbench.TestValueFormat(); {
	case (v == 0 || v >= 4) && fromChanges < 30:
		t.Fatalf("%d of the commits over a parent were built from the change feed, want every one", fromChanges)
	case v != 0 && v < 4 && fromChanges != 0:
		t.Fatalf("value format %d: %d commits built from the change feed", v, fromChanges)
	}

	// Puts racing commits: some join a commit's group after it
	// (TestChangedPaths pins that boundary exactly).
	for phase := range 3 {
		var wg sync.WaitGroup
		for w := range 4 {
			wg.Go(func() {
				for i := range 40 {
					in := putInput("wb", "outputs", fmt.Sprintf("race%d/w%d/f%02d.txt", phase, w, i), `"text":"r"`)
					if _, werr := s.Dispatch(t.Context(), "workbench_put_file", []byte(in)); werr != nil {
						t.Error(werr)
					}
				}
			})
		}
		for range 12 {
			n++
			_, werr := s.Dispatch(t.Context(), "workbench_commit", []byte(commitInput("wb", fmt.Sprintf(`{"n":%d}`, n), digest01, true)))
			if werr != nil && werr.Code != "WorkbenchCommitConflict" && werr.Code != "LifecycleConflict" {
				t.Error(werr)
			}
		}
		wg.Wait()
		check(commit())
	}
	workbench.CheckCommitClosureForTest(t, s)
}

// headCommit returns the commit workbench id's head names.
func headCommit(t *testing.T, s *workbench.Service, id string) nokv.Commit {
	t.Helper()
	var best nokv.Commit
	for _, c := range workbench.CommitsForTest(t, s) {
		if c.WorkbenchID == id && c.ConsumerCount > 0 && c.CreatedVersion >= best.CreatedVersion {
			best = c
		}
	}
	return best
}

// headCommitMembers returns c's id and its members by path.
func headCommitMembers(t *testing.T, s *workbench.Service, c nokv.Commit) (nokv.CommitID, map[string]nokv.CommitMember) {
	t.Helper()
	for id, cc := range workbench.CommitsForTest(t, s) {
		if cc.CreatedVersion == c.CreatedVersion && cc.WorkbenchID == c.WorkbenchID {
			out := map[string]nokv.CommitMember{}
			for _, m := range workbench.MembersForTest(t, s, id, cc) {
				out[workbench.LogicalPath(m.Path)] = m.M
			}
			return id, out
		}
	}
	t.Fatal("no such commit")
	return nokv.CommitID{}, nil
}
