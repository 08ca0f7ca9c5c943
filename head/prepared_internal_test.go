package head

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cairnstore/cairn/bucket/digest"
	"github.com/cairnstore/cairn/bucket/fault"
	"github.com/cairnstore/cairn/bucket/mem"
	"github.com/cairnstore/cairn/roots"
	"github.com/cairnstore/cairn/shards"
)

// preparedSetup opens a Store (and returns its bucket) whose base holds
// 200 keys, folded, with a small MaxDeltaBytes, so that a few commits of
// 20 values pass it.
func preparedSetup(t *testing.T) (*Store, *fault.Bucket, shards.ShardID) {
	return preparedSetupWith(t, Options{MaxDeltaBytes: 4096, Check: true})
}

// preparedSetupWith is preparedSetup with the Store's options.
func preparedSetupWith(t *testing.T, opts Options) (*Store, *fault.Bucket, shards.ShardID) {
	t.Helper()
	fb := fault.New(mem.NewBucket())
	id := shards.NewShardID()
	s, err := Open(context.Background(), fb, id, testSchema, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	ruleDo(t, s, func(tx *Tx) error {
		for i := range 200 {
			if err := tx.Put(ruleFam, ruleKey(i), preparedValue(i, 0)); err != nil {
				return err
			}
		}
		return nil
	})
	if err := s.Fold(context.Background()); err != nil {
		t.Fatal(err)
	}
	return s, fb, id
}

func preparedValue(i, round int) []byte {
	return []byte(fmt.Sprintf("value %d of round %d %s", i, round, strings.Repeat("x", 40)))
}

// preparedCommit writes 20 keys of round r (keys spread over the base,
// so that a fold rewrites several shards), within a deadline: a commit
// that waited for the fold being prepared would miss it.
func preparedCommit(t *testing.T, s *Store, r int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, err := s.Do(ctx, Command{Apply: func(tx *Tx) ([]byte, error) {
		for j := range 20 {
			i := (r*37 + j*9) % 200
			if err := tx.Put(ruleFam, ruleKey(i), preparedValue(i, r)); err != nil {
				return nil, err
			}
		}
		return nil, nil
	}})
	if err != nil {
		t.Fatalf("commit of round %d: %v", r, err)
	}
}

// preparedWant returns the value each key should read after rounds
// 1..last.
func preparedWant(last int) map[int][]byte {
	want := map[int][]byte{}
	for i := range 200 {
		want[i] = preparedValue(i, 0)
	}
	for r := 1; r <= last; r++ {
		for j := range 20 {
			i := (r*37 + j*9) % 200
			want[i] = preparedValue(i, r)
		}
	}
	return want
}

func preparedRead(t *testing.T, s *Store, want map[int][]byte) {
	t.Helper()
	sn := rulePin(t, s)
	for i, w := range want {
		got, ok, err := sn.Get(context.Background(), ruleFam, ruleKey(i))
		if err != nil || !ok || !bytes.Equal(got, w) {
			t.Fatalf("key %d reads %q, %v, %v; want %q", i, got, ok, err, w)
		}
	}
}

// waitFor polls cond until it holds or a deadline passes.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for end := time.Now().Add(10 * time.Second); !cond(); {
		if time.Now().After(end) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// blockTables makes the next put of a table wait until release is
// closed, and reports through blocked that one waits. Only a fold writes
// tables; the test's commits write deltas.
func blockTables(fb *fault.Bucket, s *Store) (blocked *atomic.Bool, release chan struct{}) {
	blocked, release = &atomic.Bool{}, make(chan struct{})
	prefix := strings.TrimSuffix(s.layout.Table(digest.Hash{}), digest.Hash{}.String())
	fb.Inject(fault.Rule{Op: fault.OpPut, Prefix: prefix, Count: 1, Fault: fault.Hook(func(ctx context.Context, _ fault.Op, _ string) error {
		blocked.Store(true)
		select {
		case <-release:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	})})
	return blocked, release
}

// commitUntilHeld commits rounds 1, 2, ... until a fold being prepared
// waits in blocked's hook, and returns the last round.
func commitUntilHeld(t *testing.T, s *Store, blocked *atomic.Bool) int {
	t.Helper()
	r := 0
	for !blocked.Load() {
		r++
		if r > 20 {
			t.Fatal("no fold was prepared after 20 commits past MaxDeltaBytes")
		}
		preparedCommit(t, s, r)
		time.Sleep(10 * time.Millisecond) // let the preparation reach its tables
	}
	return r
}

// TestPreparedFoldInstalledByNextCommit checks that a fold the deltas'
// bytes call for is prepared beside the commits: while its writes are
// held, commits go on landing deltas (none waits for the fold); once it
// is staged, a commit makes it current, and the root then lists the
// fold's tables and only the deltas that came after the root it folded.
// Every commit is checked (Options.Check), every value reads as written.
func TestPreparedFoldInstalledByNextCommit(t *testing.T) {
	s, fb, _ := preparedSetup(t)
	blocked, release := blockTables(fb, s)
	base := rulePin(t, s)
	r := commitUntilHeld(t, s, blocked)
	held := rulePin(t, s)
	for range 3 {
		r++
		preparedCommit(t, s, r)
	}
	during := rulePin(t, s)
	if !slices.Equal(during.root.Families, base.root.Families) {
		t.Fatal("the base changed while the fold was held: a commit folded")
	}
	if len(during.root.Deltas) != len(held.root.Deltas)+3 {
		t.Fatalf("the root lists %d deltas after 3 more commits on %d", len(during.root.Deltas), len(held.root.Deltas))
	}
	close(release)
	// The installing commit lists the deltas that came after the held
	// root, which may pass MaxDeltaBytes again: a second fold may be
	// prepared and installed before this looks.
	waitFor(t, "the prepared fold's installation", func() bool { return s.CommitStats().Installed >= 1 })
	after := rulePin(t, s)
	if slices.Equal(after.root.Families, base.root.Families) {
		t.Fatal("the installed fold left the base as it was")
	}
	if n := len(after.root.Deltas); n >= len(during.root.Deltas) || after.root.DeltaBytes() > s.opts.MaxDeltaBytes*2 {
		t.Fatalf("after the installation the root lists %d deltas of %d bytes (before it: %d)", n, after.root.DeltaBytes(), len(during.root.Deltas))
	}
	for _, d := range after.root.Deltas {
		if slices.Contains(held.root.Deltas, d) && !slices.Contains(during.root.Deltas[:3], d) {
			t.Fatalf("delta %s of sequence %d, folded, is still listed", d.Ref.Hash, d.Sequence)
		}
	}
	preparedRead(t, s, preparedWant(r))
	r++
	preparedCommit(t, s, r)
	preparedRead(t, s, preparedWant(r))
	if st := s.CommitStats(); st.Dropped != 0 {
		t.Errorf("%d prepared folds dropped, want none", st.Dropped)
	}
}

// TestPreparedFoldDroppedWhenTheBaseChanged checks that a prepared fold
// whose base another replica folded meanwhile is dropped, not installed,
// by the leader it is handed to even if no command comes; the next commit
// builds on the other fold, and every value reads as written.
func TestPreparedFoldDroppedWhenTheBaseChanged(t *testing.T) {
	s, fb, id := preparedSetup(t)
	blocked, release := blockTables(fb, s)
	r := commitUntilHeld(t, s, blocked)
	other, err := Open(context.Background(), fb, id, testSchema, Options{MaxDeltaBytes: 4096, Check: true})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if err := other.Fold(context.Background()); err != nil {
		t.Fatal(err)
	}
	close(release)
	// No commit comes: the leader, handed the fold, finds it can no
	// longer be installed and drops it.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := s.FoldsSettled(ctx); err != nil {
		t.Fatalf("the prepared fold was neither installed nor dropped: %v", err)
	}
	if st := s.CommitStats(); st.Dropped != 1 {
		t.Fatalf("%d prepared folds dropped before the next commit, want 1", st.Dropped)
	}
	r++
	preparedCommit(t, s, r)
	preparedRead(t, s, preparedWant(r))
	if st := s.CommitStats(); st.Installed != 0 || st.Dropped != 1 {
		t.Fatalf("%d prepared folds installed and %d dropped; want 0 and 1", st.Installed, st.Dropped)
	}
}

// TestPreparedFoldInstallable checks when a commit may install a prepared
// fold: not when the store stamped its objects before the commit's floor
// (a sweep may take them), nor when it was staged longer than
// MaxAttemptAge ago, nor when the commit's parent has another base or
// lacks the deltas it folded; the first two, and a parent newer than the
// root it folded, drop it.
func TestPreparedFoldInstallable(t *testing.T) {
	s, _, _ := preparedSetup(t)
	preparedCommit(t, s, 1)
	sn := rulePin(t, s)
	if len(sn.root.Deltas) == 0 || len(sn.root.Families) == 0 {
		t.Fatalf("the root lists %d deltas and %d families", len(sn.root.Deltas), len(sn.root.Families))
	}
	now := time.Now()
	other := slices.Clone(sn.root.Families)
	other[0].Table.Hash[0] ^= 1
	older := sn.head.Sequence - 1
	for _, tc := range []struct {
		name           string
		seq            uint64
		base           []roots.FamilyRef
		folded         []roots.DeltaRef
		staged, oldest time.Time
		ok, kept       bool
	}{
		{"fresh", sn.head.Sequence, sn.root.Families, sn.root.Deltas, now, now, true, true},
		{"stamped before the floor", sn.head.Sequence, sn.root.Families, sn.root.Deltas, now, now.Add(-2 * time.Minute), false, false},
		{"staged too long ago", sn.head.Sequence, sn.root.Families, sn.root.Deltas, now.Add(-2 * s.opts.MaxAttemptAge), now, false, false},
		{"a store without times", sn.head.Sequence, sn.root.Families, sn.root.Deltas, now, time.Time{}, true, true},
		{"another base", sn.head.Sequence, other, sn.root.Deltas, now, now, false, true},
		{"another base, on a newer parent", older, other, sn.root.Deltas, now, now, false, false},
		{"deltas the parent lacks, on a newer parent", older, sn.root.Families, []roots.DeltaRef{{Sequence: 1}}, now, now, false, false},
	} {
		pf := &preparedFold{seq: tc.seq, base: tc.base, folded: tc.folded, staged: tc.staged, oldest: tc.oldest}
		s.mu.Lock()
		s.prepared = pf
		s.mu.Unlock()
		got := s.installable(sn, now.Add(-time.Minute))
		s.mu.Lock()
		kept := s.prepared == pf
		s.mu.Unlock()
		if (got == pf) != tc.ok || kept != tc.kept {
			t.Errorf("%s: installable %v, kept %v; want %v, %v", tc.name, got == pf, kept, tc.ok, tc.kept)
		}
	}
	s.mu.Lock()
	s.prepared = nil
	s.mu.Unlock()
}

// TestPreparedFoldNotOvertakenByTheDeltaCount checks that while a fold is
// being prepared, commits that take the root's deltas past MaxDeltas (but
// not twice it) neither merge nor fold them: either would change what the
// prepared fold folded, drop it, and fold inline instead (a served
// replica's commits then waited seconds for it). Once staged, the
// prepared fold is installed.
func TestPreparedFoldNotOvertakenByTheDeltaCount(t *testing.T) {
	s, fb, _ := preparedSetupWith(t, Options{MaxDeltaBytes: 4096, MaxDeltas: 4, Check: true})
	blocked, release := blockTables(fb, s)
	base := rulePin(t, s)
	r := commitUntilHeld(t, s, blocked)
	for len(rulePin(t, s).root.Deltas) < 2*s.opts.MaxDeltas-1 {
		r++
		preparedCommit(t, s, r)
		time.Sleep(10 * time.Millisecond) // let a merge or fold the commit called for run
		if sn := rulePin(t, s); !slices.Equal(sn.root.Families, base.root.Families) || len(sn.root.Deltas) < 2 {
			t.Fatalf("after commit %d the root lists %d deltas on another base: a merge or fold overtook the fold being prepared", r, len(sn.root.Deltas))
		}
	}
	close(release)
	waitFor(t, "the prepared fold's installation", func() bool { return s.CommitStats().Installed >= 1 })
	if st := s.CommitStats(); st.Dropped != 0 {
		t.Fatalf("%d prepared folds dropped, want none", st.Dropped)
	}
	preparedRead(t, s, preparedWant(r))
}
