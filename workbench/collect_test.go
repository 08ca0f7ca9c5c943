package workbench_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/cairnstore/cairn/bucket"
	"github.com/cairnstore/cairn/bucket/digest"
	"github.com/cairnstore/cairn/bucket/fault"
	"github.com/cairnstore/cairn/bucket/mem"
	"github.com/cairnstore/cairn/gcsweep"
	"github.com/cairnstore/cairn/head"
	"github.com/cairnstore/cairn/manifests/bodies"
	"github.com/cairnstore/cairn/roots/walk"
	"github.com/cairnstore/cairn/workbench"
	"github.com/cairnstore/cairn/workbench/internal/nokv"
)

func collectOptions(agent string) workbench.Options {
	return workbench.Options{AgentID: agent, BlockSize: 1 << 10, InlineMax: 256}
}

// collectClock is the store's clock of the buckets of these tests, which
// sweepPast moves on.
var collectClock = newStoreClock()

// sweepPast moves the store's clock (collectClock) two hours on and runs
// a sweep of s's shard, and returns its report: its Kept is what a
// collection waits for.
func sweepPast(t *testing.T, b bucket.Bucket, s *workbench.Service, dryRun bool) *gcsweep.Report {
	t.Helper()
	collectClock.Advance(2 * time.Hour)
	opts := workbench.SweepOptions()
	opts.DryRun = dryRun
	rep, err := gcsweep.Sweep(context.Background(), b, s.Store().Layout(), opts)
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

// revisionStates counts the deployment's revisions by state.
func revisionStates(t *testing.T, s *workbench.Service) map[nokv.RevisionState]int {
	t.Helper()
	ctx := context.Background()
	sn, err := s.Store().Pin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	root := s.Root()
	recs, err := sn.Scan(ctx, nokv.FamilyArtifactRevision, root[:], nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	out := map[nokv.RevisionState]int{}
	for _, r := range recs {
		v, err := nokv.DecodeArtifactRevision(r.Value)
		if err != nil {
			t.Fatal(err)
		}
		out[v.State]++
	}
	return out
}

func blockCount(t *testing.T, b bucket.Bucket, s *workbench.Service) int {
	t.Helper()
	objs, _, err := bucket.ListAll(context.Background(), b, bucket.ListOptions{Prefix: bodies.ArtifactsPrefix(s.Store().Layout())})
	if err != nil {
		t.Fatal(err)
	}
	return len(objs)
}

// TestCollectRevisions: a replaced revision's blocks are deleted and its
// rows removed once no reader can read it; an append's base waits until
// the revision that reused its blocks is collected; a held root older
// than the replacement keeps both waiting; afterwards a sweep leaves
// exactly what the head reaches, the store checks, and every file reads.
func TestCollectRevisions(t *testing.T) {
	ctx := context.Background()
	b := mem.NewBucketAt(collectClock.Now)
	s := newServiceOn(t, b, collectOptions("collect"))
	a1, a2 := strings.Repeat("a", 2500), strings.Repeat("A", 1500)
	mustCall(t, s, "workbench_put_file", putInput("wb", "outputs", "a.txt", `"text":"`+a1+`"`))
	// b.txt: 3 blocks, then an append that reuses them (a dependency).
	mustCall(t, s, "workbench_put_file", putInput("wb", "outputs", "b.txt", `"text":"`+strings.Repeat("b", 2500)+`"`))
	mustCall(t, s, "workbench_append", appendInput("wb", "outputs", "b.txt", `"text":"tail"`))
	// A snapshot-like hold of this state: both old revisions are read
	// through it.
	if _, err := s.Store().Do(ctx, head.Command{Apply: func(tx *head.Tx) ([]byte, error) {
		return nil, tx.Hold("test-hold", tx.Snapshot().RootHash())
	}}); err != nil {
		t.Fatal(err)
	}
	mustCall(t, s, "workbench_put_file", putInput("wb", "outputs", "a.txt", `"text":"`+a2+`"`, `"replace":true`))
	mustCall(t, s, "workbench_put_file", putInput("wb", "outputs", "b.txt", `"text":"B"`, `"replace":true`))
	if got := blockCount(t, b, s); got != 3+3+2 {
		t.Fatalf("%d blocks stored, want 8", got)
	}

	// Held: nothing is due.
	rep, err := s.CollectRevisions(ctx, workbench.CollectOptions{Kept: sweepPast(t, b, s, true).Kept})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Candidates != 2 || rep.Waiting != 2 || rep.Collected != 0 {
		t.Fatalf("with the hold: %+v", rep)
	}
	// Released: a1 is collected (3 blocks); b's appended revision too
	// (its tail is inline, its blocks are its base's), which makes the
	// base a candidate, due only after a later sweep.
	if _, err := s.Store().Do(ctx, head.Command{Apply: func(tx *head.Tx) ([]byte, error) {
		tx.Release("test-hold")
		return nil, nil
	}}); err != nil {
		t.Fatal(err)
	}
	dry, err := s.CollectRevisions(ctx, workbench.CollectOptions{Kept: sweepPast(t, b, s, true).Kept, DryRun: true})
	if err != nil || dry.Collected != 2 || blockCount(t, b, s) != 8 {
		t.Fatalf("dry run: %+v, %v, %d blocks", dry, err, blockCount(t, b, s))
	}
	rep, err = s.CollectRevisions(ctx, workbench.CollectOptions{Kept: sweepPast(t, b, s, true).Kept})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Collected != 2 || rep.BlocksDeleted != 3 || blockCount(t, b, s) != 5 {
		t.Fatalf("first round: %+v, %d blocks left", rep, blockCount(t, b, s))
	}
	rep, err = s.CollectRevisions(ctx, workbench.CollectOptions{Kept: sweepPast(t, b, s, true).Kept})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Collected != 1 || rep.BlocksDeleted != 3 || blockCount(t, b, s) != 2 {
		t.Fatalf("second round (the base): %+v, %d blocks left", rep, blockCount(t, b, s))
	}
	if st := revisionStates(t, s); st[nokv.RevisionStateDeleted] != 3 || st[nokv.RevisionStateAvailable] != 2 {
		t.Fatalf("revision states %v", st)
	}
	again, err := s.CollectRevisions(ctx, workbench.CollectOptions{Kept: sweepPast(t, b, s, true).Kept})
	if err != nil || again.Candidates != 0 {
		t.Fatalf("a third round: %+v, %v", again, err)
	}

	// The physical sweep: exactly what the head reaches stays, with the
	// two live blocks of a2; everything checks and reads.
	swept := sweepPast(t, b, s, false)
	if swept.Deleted.Objects == 0 {
		t.Fatalf("the sweep deleted nothing: %+v", swept)
	}
	layout := s.Store().Layout()
	h, _, err := head.ReadHead(ctx, b, layout, head.Marker{})
	if err != nil {
		t.Fatal(err)
	}
	root, _ := digest.Parse(h.Root)
	if err := head.Check(ctx, b, layout, root, head.CheckOptions{Strict: true}); err != nil {
		t.Fatal(err)
	}
	// A walk reads records as stored: a delta the head still lists may
	// hold a collected revision's rows under the newer delta that deleted
	// them. A verifying walk with the refs of what the root references
	// (as pin verify walks) demands only the live revisions' blocks, and
	// finds every one, before a fold and after.
	for _, fold := range []bool{false, true} {
		if fold {
			if err := s.Store().Fold(ctx); err != nil {
				t.Fatal(err)
			}
		}
		sn, err := s.Store().Pin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		refs, err := workbench.PinBlockRefs(ctx, s.Store(), sn.RootHash())
		if err != nil {
			t.Fatal(err)
		}
		if err := walk.Walk(ctx, b, layout, sn.RootHash(), refs, walk.Options{Verify: true}, func(walk.Object) error { return nil }); err != nil {
			t.Fatalf("a verifying walk after collection (folded %t): %v", fold, err)
		}
	}
	cold := newServiceOn(t, b, collectOptions("collect"))
	if got := readText(t, cold, "wb", "outputs/a.txt"); got != a2 {
		t.Fatalf("a.txt: %d bytes", len(got))
	}
	if got := readText(t, cold, "wb", "outputs/b.txt"); got != "B" {
		t.Fatalf("b.txt: %q", got)
	}
}

// TestCollectRevisionsQuarantinesAnAmbiguousDelete: a block delete whose
// outcome is unknown makes the revision and its candidate Quarantined,
// and later runs leave it alone.
func TestCollectRevisionsQuarantinesAnAmbiguousDelete(t *testing.T) {
	ctx := context.Background()
	inner := mem.NewBucketAt(collectClock.Now)
	fb := fault.New(inner)
	s := newServiceOn(t, fb, collectOptions("quarantine"))
	mustCall(t, s, "workbench_put_file", putInput("wb", "outputs", "a.txt", `"text":"`+strings.Repeat("a", 2500)+`"`))
	mustCall(t, s, "workbench_put_file", putInput("wb", "outputs", "a.txt", `"text":"small"`, `"replace":true`))
	fb.Inject(fault.Rule{Op: fault.OpDelete, Prefix: bodies.ArtifactsPrefix(s.Store().Layout()), Count: 1, Fault: fault.LoseResponse()})
	rep, err := s.CollectRevisions(ctx, workbench.CollectOptions{Kept: sweepPast(t, inner, s, true).Kept})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Quarantined != 1 || rep.Collected != 0 {
		t.Fatalf("%+v", rep)
	}
	if st := revisionStates(t, s); st[nokv.RevisionStateQuarantined] != 1 {
		t.Fatalf("revision states %v", st)
	}
	rep, err = s.CollectRevisions(ctx, workbench.CollectOptions{Kept: sweepPast(t, inner, s, true).Kept})
	if err != nil || rep.Quarantined != 1 || rep.Candidates != 0 || rep.BlocksDeleted != 0 {
		t.Fatalf("a later run: %+v, %v", rep, err)
	}
	if got := readText(t, s, "wb", "outputs/a.txt"); got != "small" {
		t.Fatalf("a.txt: %q", got)
	}
}

// candidateOf returns the one current candidate's revision: its created
// version and the version since which it has had no reference.
func candidateOf(t *testing.T, s *workbench.Service) (created, lastZero uint64) {
	t.Helper()
	ctx := context.Background()
	sn, err := s.Store().Pin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	root := s.Root()
	recs, err := sn.Scan(ctx, nokv.FamilyGcCandidate, root[:], nil, 0)
	if err != nil || len(recs) != 1 {
		t.Fatalf("%d candidates, %v", len(recs), err)
	}
	k, err := nokv.ParseGcCandidateKey(recs[0].Key)
	if err != nil {
		t.Fatal(err)
	}
	rk, _ := nokv.ArtifactRevisionKey{Root: root, Revision: k.Revision}.Encode()
	b, _, err := sn.Get(ctx, nokv.FamilyArtifactRevision, rk)
	if err != nil {
		t.Fatal(err)
	}
	rev, err := nokv.DecodeArtifactRevision(b)
	if err != nil {
		t.Fatal(err)
	}
	return rev.CreatedVersion, rev.LastZeroRefVersion
}

// TestCollectRevisionsGraceRule: what the sweep kept decides. A root
// within the grace period keeps a replaced revision only if it was
// committed while the revision was referenced (created ≤ S < last zero);
// a candidate that became one after the newest head the sweep kept
// waits; without a head nothing is collected.
func TestCollectRevisionsGraceRule(t *testing.T) {
	ctx := context.Background()
	b := mem.NewBucketAt(collectClock.Now)
	s := newServiceOn(t, b, collectOptions("grace"))
	mustCall(t, s, "workbench_put_file", putInput("wb", "outputs", "a.txt", `"text":"`+strings.Repeat("a", 2500)+`"`))
	mustCall(t, s, "workbench_put_file", putInput("wb", "outputs", "b.txt", `"text":"b"`))
	mustCall(t, s, "workbench_put_file", putInput("wb", "outputs", "a.txt", `"text":"A"`, `"replace":true`))
	mustCall(t, s, "workbench_put_file", putInput("wb", "outputs", "c.txt", `"text":"c"`))
	created, lastZero := candidateOf(t, s)
	head := gcsweep.KeptRoot{Sequence: lastZero + 1, Why: gcsweep.KeptHead}
	grace := func(seq uint64) gcsweep.KeptRoot { return gcsweep.KeptRoot{Sequence: seq, Why: gcsweep.KeptGrace} }
	for _, c := range []struct {
		name      string
		kept      []gcsweep.KeptRoot
		collected int
	}{
		{"no head", []gcsweep.KeptRoot{grace(lastZero)}, 0},
		{"replaced after the newest head", []gcsweep.KeptRoot{{Sequence: lastZero - 1, Why: gcsweep.KeptHead}}, 0},
		{"a root of the grace that referenced it", []gcsweep.KeptRoot{head, grace(lastZero - 1)}, 0},
		{"the root that created it", []gcsweep.KeptRoot{head, grace(created)}, 0},
		{"a root of the grace since the replacement", []gcsweep.KeptRoot{head, grace(lastZero)}, 1},
		{"a root of the grace before it was created", []gcsweep.KeptRoot{head, grace(created - 1)}, 1},
	} {
		rep, err := s.CollectRevisions(ctx, workbench.CollectOptions{Kept: c.kept, DryRun: true})
		if err != nil || rep.Candidates != 1 || rep.Collected != c.collected || rep.Waiting != 1-c.collected {
			t.Errorf("%s: %+v, %v", c.name, rep, err)
		}
	}
}

// TestCollectRevisionsInBatches: one run collects every due candidate,
// a bounded batch per claim and finish command.
func TestCollectRevisionsInBatches(t *testing.T) {
	ctx := context.Background()
	b := mem.NewBucketAt(collectClock.Now)
	s := newServiceOn(t, b, collectOptions("batches"))
	const files = 11
	for i := range files {
		mustCall(t, s, "workbench_put_file", putInput("wb", "outputs", fmt.Sprintf("f%d.txt", i), `"text":"`+strings.Repeat("x", 1500)+`"`))
	}
	for i := range files {
		mustCall(t, s, "workbench_put_file", putInput("wb", "outputs", fmt.Sprintf("f%d.txt", i), `"text":"small"`, `"replace":true`))
	}
	if got := blockCount(t, b, s); got != 2*files {
		t.Fatalf("%d blocks, want %d", got, 2*files)
	}
	rep, err := s.CollectRevisions(ctx, workbench.CollectOptions{Kept: sweepPast(t, b, s, true).Kept, Batch: 4})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Candidates != files || rep.Collected != files || rep.BlocksDeleted != 2*files || rep.Commands != 2*3 {
		t.Fatalf("%+v, want %d collected in 3 batches", rep, files)
	}
	if got := blockCount(t, b, s); got != 0 {
		t.Fatalf("%d blocks left", got)
	}
	if st := revisionStates(t, s); st[nokv.RevisionStateDeleted] != files || st[nokv.RevisionStateAvailable] != files {
		t.Fatalf("revision states %v", st)
	}
	// A replaced inline revision needs no collection: with no snapshot
	// that may name it, the replacing command retires it.
	for i := range files {
		mustCall(t, s, "workbench_put_file", putInput("wb", "outputs", fmt.Sprintf("f%d.txt", i), `"text":"`+strings.Repeat("y", 1500)+`"`, `"replace":true`))
	}
	if st := revisionStates(t, s); st[nokv.RevisionStateDeleted] != 2*files || st[nokv.RevisionStateAvailable] != files {
		t.Fatalf("revision states after replacing inline bodies %v", st)
	}
	// BatchBytes bounds a batch too: each revision's records exceed one
	// byte, so each batch holds one.
	for i := range files {
		mustCall(t, s, "workbench_put_file", putInput("wb", "outputs", fmt.Sprintf("f%d.txt", i), `"text":"smaller"`, `"replace":true`))
	}
	again, err := s.CollectRevisions(ctx, workbench.CollectOptions{Kept: sweepPast(t, b, s, true).Kept, BatchBytes: 1})
	if err != nil || again.Candidates != files || again.Collected != files || again.Commands != 2*files {
		t.Fatalf("a second run: %+v, %v", again, err)
	}
	for i := range files {
		if got := readText(t, s, "wb", fmt.Sprintf("outputs/f%d.txt", i)); got != "smaller" {
			t.Fatalf("f%d.txt: %q", i, got)
		}
	}
}

// TestReplacedInlineRevisionRetiredUnlessHeld: the command that replaces
// an inline body retires the old revision at once, unless a snapshot
// taken since it was created may still restore it; that one waits for a
// collection, and the restore reads it.
func TestReplacedInlineRevisionRetiredUnlessHeld(t *testing.T) {
	ctx := context.Background()
	b := mem.NewBucketAt(collectClock.Now)
	s := newServiceOn(t, b, workbench.Options{AgentID: "inline"})
	put := func(text string, replace bool) {
		t.Helper()
		mustCall(t, s, "workbench_put_file", putInput("wb", "outputs", "a.txt", fmt.Sprintf(`"text":%q`, text), fmt.Sprintf(`"replace":%t`, replace)))
	}
	states := func(when string, deleted, available int) {
		t.Helper()
		if st := revisionStates(t, s); st[nokv.RevisionStateDeleted] != deleted || st[nokv.RevisionStateAvailable] != available {
			t.Fatalf("%s: revision states %v, want %d Deleted and %d Available", when, st, deleted, available)
		}
	}
	put("one", false)
	put("two", true)
	states("after one replacement", 1, 1)
	mustCall(t, s, "workbench_commit", commitInput("wb", `{"task":"inline"}`, digestAA)) // a snapshot needs a commit
	put("three", true)
	snap := mintSnapshot(t, s, "wb")
	put("four", true)
	// "two" and the run manifest are the commit's; "three" waits for the
	// snapshot, "four" is current.
	states("with a snapshot of the replaced body", 1, 4)
	mustCall(t, s, "workbench_restore", restoreIn("wb", "back", fmt.Sprintf(`"at_snapshot":%d`, snap)))
	if got := readText(t, s, "back", "outputs/a.txt"); got != "three" {
		t.Fatalf("restored a.txt: %q", got)
	}
	// "four" was created after the snapshot's read version: no hold can
	// name it.
	put("five", true)
	// (The restore referenced "three" again and wrote its own manifests.)
	states("after replacing a body newer than the snapshot", 2, 6)
	rep, err := s.CollectRevisions(ctx, workbench.CollectOptions{Kept: sweepPast(t, b, s, true).Kept})
	if err != nil || rep.Collected != 0 {
		t.Fatalf("collection with the snapshot alive: %+v, %v", rep, err)
	}
	if got := readText(t, s, "wb", "outputs/a.txt"); got != "five" {
		t.Fatalf("a.txt: %q", got)
	}
	workbench.FsckCleanForTest(t, s)
}

// TestReplacedInlineRevisionUnderManySnapshots: past 16 live snapshots a
// release reads no HistoryHold rows and leaves every replaced revision to
// the collection, even one no snapshot can name.
func TestReplacedInlineRevisionUnderManySnapshots(t *testing.T) {
	b := mem.NewBucketAt(collectClock.Now)
	s := newServiceOn(t, b, workbench.Options{AgentID: "many"})
	put := func(path, text string, replace bool) {
		t.Helper()
		mustCall(t, s, "workbench_put_file", putInput("wb", "outputs", path, fmt.Sprintf(`"text":%q`, text), fmt.Sprintf(`"replace":%t`, replace)))
	}
	put("a.txt", "one", false)
	mustCall(t, s, "workbench_commit", commitInput("wb", `{"task":"many"}`, digestAA))
	for range 17 {
		mintSnapshot(t, s, "wb")
	}
	put("b.txt", "one", false) // created after every snapshot
	put("b.txt", "two", true)
	if st := revisionStates(t, s); st[nokv.RevisionStateDeleted] != 0 {
		t.Fatalf("revision states under 17 snapshots %v: want none retired at once", st)
	}
	workbench.FsckCleanForTest(t, s)
}
