package head

import (
	"bytes"
	"context"
	"crypto/rand"
	"slices"
	"testing"
	"time"

	"github.com/cairnstore/cairn/bucket"
	"github.com/cairnstore/cairn/bucket/mem"
	"github.com/cairnstore/cairn/shards"
)

// putValues returns a batch of n records of ruleFam, keys from first on,
// each with a value of size bytes.
func putValues(t *testing.T, first, n, size int) *batchState {
	t.Helper()
	st := newBatchState(testSchema.Families)
	for i := range n {
		if err := st.put(ruleFam, ruleKey(first+i), bytes.Repeat([]byte{byte('a' + i%26)}, size)); err != nil {
			t.Fatal(err)
		}
	}
	return st
}

// boundedPair opens two Stores of one new shard: w lists deltas of any
// size, s folds past bound bytes of them. Both close after the test.
func boundedPair(t *testing.T, bound int64) (w, s *Store) {
	t.Helper()
	ctx := context.Background()
	b := mem.NewBucket()
	id := shards.NewShardID()
	w, err := Open(ctx, b, id, testSchema, Options{MaxDeltaBytes: 64 << 20})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	s, err = Open(ctx, b, id, testSchema, Options{MaxDeltaBytes: bound})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return w, s
}

// TestBuildDeltaBounds checks when a commit lists its batch as a delta
// and when it folds: on a parent within MaxDeltaBytes a batch's delta is
// listed up to loneDeltaFactor × MaxDeltaBytes, even past twice the bound;
// a larger one folds; on a parent past the bound, a batch that would take
// the list past twice it folds, and a small one is listed.
func TestBuildDeltaBounds(t *testing.T) {
	ctx := context.Background()
	const bound = 4096
	w, s := boundedPair(t, bound)
	ruleDo(t, w, func(tx *Tx) error { return tx.Put(ruleFam, ruleKey(1), []byte("A")) })

	build := func(sn *Snapshot, st *batchState) (deltas int, folded bool) {
		t.Helper()
		c, err := s.build(ctx, sn, st, newNonce(), keepDeltas, time.Now(), nil)
		if err != nil {
			t.Fatal(err)
		}
		if len(c.root.Deltas) == 0 {
			return 0, true
		}
		if c.root.Deltas[0].Sequence != c.root.Sequence {
			t.Fatalf("the new delta is not listed first: %+v", c.root.Deltas)
		}
		return len(c.root.Deltas), false
	}

	small := rulePin(t, s)
	if s.overDeltas(small.root, 1) {
		t.Fatalf("the parent lists %d bytes of deltas, want under %d", small.root.DeltaBytes(), bound)
	}
	// About 2.3 × the bound: listed.
	if n, folded := build(small, putValues(t, 100, 9, 1000)); folded || n != len(small.root.Deltas)+1 {
		t.Fatalf("a batch of 2.3 × the bound on a parent within it: folded %v, %d deltas", folded, n)
	}
	// About 3.3 × the bound: folded.
	if _, folded := build(small, putValues(t, 100, 13, 1000)); !folded {
		t.Fatal("a batch of 3.3 × the bound was listed as a delta")
	}

	// A parent past the bound, its fold due.
	ruleDo(t, w, func(tx *Tx) error {
		for i := range 5 {
			if err := tx.Put(ruleFam, ruleKey(200+i), bytes.Repeat([]byte("x"), 1000)); err != nil {
				return err
			}
		}
		return nil
	})
	over := rulePin(t, s)
	if !s.overDeltas(over.root, 1) || s.overDeltas(over.root, 2) {
		t.Fatalf("the parent lists %d bytes of deltas, want between %d and %d", over.root.DeltaBytes(), bound, 2*bound)
	}
	if _, folded := build(over, putValues(t, 100, 4, 1000)); !folded {
		t.Fatal("a batch that takes a parent past the bound beyond twice it was listed as a delta")
	}
	if n, folded := build(over, putValues(t, 100, 1, 10)); folded || n != len(over.root.Deltas)+1 {
		t.Fatalf("a small batch on a parent past the bound: folded %v, %d deltas", folded, n)
	}
}

// TestPendingIntentsBudget checks that a commit reads other replicas'
// intents oldest first up to intentBudget × MaxDeltaBytes of them, less
// its own calls' payloads, and always the oldest one.
func TestPendingIntentsBudget(t *testing.T) {
	ctx := context.Background()
	b := mem.NewBucket()
	const bound = 4096
	s, err := Open(ctx, b, shards.NewShardID(), testSchema, Options{MaxDeltaBytes: bound, Intents: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	// Six intents of about 1,000 bytes, published a millisecond apart.
	base := time.Now().Add(-time.Second).UnixMilli()
	var keys []string
	for i := range 6 {
		body, err := encodeIntent(time.UnixMilli(base+int64(i)), []intentCmd{{RequestID: "r", Kind: "k", Payload: bytes.Repeat([]byte("p"), 1000)}})
		if err != nil {
			t.Fatal(err)
		}
		key := s.layout.Intent(base+int64(i), [8]byte{byte(i)})
		if _, err := b.Put(ctx, key, body, bucket.IfAbsent()); err != nil {
			t.Fatal(err)
		}
		keys = append(keys, key)
	}
	read := func(calls []*call) []string {
		t.Helper()
		got, err := s.pendingIntents(ctx, calls)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, f := range got {
			names = append(names, f.key)
		}
		return names
	}
	eq := func(what string, got, want []string) {
		t.Helper()
		if len(got) != len(want) {
			t.Fatalf("%s: read %d intents %v, want %v", what, len(got), got, want)
		}
		for i := range got {
			if got[i] != want[i] {
				t.Fatalf("%s: read %v, want %v", what, got, want)
			}
		}
	}
	budget := int(intentBudget * bound)
	fit := budget / 1050 // each intent is its payload and a few dozen bytes
	if fit < 1 || fit >= len(keys) {
		t.Fatalf("the budget of %d bytes fits %d of %d intents: the test needs some left out", budget, fit, len(keys))
	}
	eq("no calls of its own", read(nil), keys[:fit])
	own := &call{cmd: Command{Kind: "k", Payload: bytes.Repeat([]byte("q"), budget)}}
	eq("calls that fill the budget", read([]*call{own}), keys[:1])
}

// TestCarrierSilence checks how long a Store leaves a carrier silent
// before it carries itself: two intervals, or foldShares when the root is
// past the delta bounds and the carrier is folding.
func TestCarrierSilence(t *testing.T) {
	ctx := context.Background()
	b := mem.NewBucket()
	id := shards.NewShardID()
	const interval = time.Second
	w, err := Open(ctx, b, id, testSchema, Options{MaxDeltaBytes: 64 << 20})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	s, err := Open(ctx, b, id, testSchema, Options{MaxDeltaBytes: 4096, MinCommitInterval: interval})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ruleDo(t, w, func(tx *Tx) error { return tx.Put(ruleFam, ruleKey(1), []byte("A")) })
	within := rulePin(t, s)
	ruleDo(t, w, func(tx *Tx) error { return tx.Put(ruleFam, ruleKey(2), bytes.Repeat([]byte("x"), 5000)) })
	past := rulePin(t, s)
	if s.overDeltas(within.root, 1) || !s.overDeltas(past.root, 1) {
		t.Fatal("the roots are not on either side of the bound")
	}
	// Another replica wrote the head last, silent for three intervals.
	s.mu.Lock()
	s.othersSeen = time.Now().Add(-3 * interval)
	s.headWritten = s.othersSeen
	s.mu.Unlock()
	if !s.carrying(within) {
		t.Fatal("a carrier silent for three intervals on a root within the bounds is still waited for")
	}
	if s.carrying(past) {
		t.Fatal("a carrier silent for three intervals while its fold is due is taken over from")
	}
	s.mu.Lock()
	s.othersSeen = time.Now().Add(-(foldShares + 1) * interval)
	s.headWritten = s.othersSeen
	s.mu.Unlock()
	if !s.carrying(past) {
		t.Fatal("a carrier silent for longer than a fold's allowance is still waited for")
	}
}

// TestDefersWhileTheHeadAdvances checks that a call leaves its commit to
// the carrier maxDefers times in a row while the head stands still, but
// for as long as maxDefersAdvancing while the carrier lands commits.
func TestDefersWhileTheHeadAdvances(t *testing.T) {
	ctx := context.Background()
	s, err := Open(ctx, mem.NewBucket(), shards.NewShardID(), testSchema, Options{MinCommitInterval: time.Millisecond, Intents: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ruleDo(t, s, func(tx *Tx) error { return tx.Put(ruleFam, ruleKey(1), []byte("A")) })
	pinned := rulePin(t, s)
	at := func(seq uint64) *Snapshot {
		h := *pinned.head
		h.Sequence = seq
		return &Snapshot{head: &h, root: pinned.root}
	}
	// defers counts the attempts c leaves to a carrier that wrote the
	// head just now, at the sequences next gives, before it competes.
	defers := func(next func(i int) uint64) int {
		t.Helper()
		c := &call{intent: "an intent"}
		for i := range 10 * maxDefersAdvancing {
			s.mu.Lock()
			s.othersSeen = time.Now()
			s.headWritten = s.othersSeen
			s.mu.Unlock()
			if !s.leaveToCarrier(ctx, at(next(i)), []*call{c}) {
				return i
			}
		}
		t.Fatal("the call never competes")
		return 0
	}
	if got := defers(func(int) uint64 { return 7 }); got != maxDefers {
		t.Errorf("the head standing still: %d defers, want %d", got, maxDefers)
	}
	if got := defers(func(i int) uint64 { return 7 + uint64(i) }); got != maxDefersAdvancing {
		t.Errorf("the head advancing at every defer: %d defers, want %d", got, maxDefersAdvancing)
	}
	// Advancing at every fourth defer: never maxDefers stalls in a row.
	if got := defers(func(i int) uint64 { return 7 + uint64(i/4) }); got != maxDefersAdvancing {
		t.Errorf("the head advancing at every fourth defer: %d defers, want %d", got, maxDefersAdvancing)
	}
}

// TestMergeDeltas checks that many small commits, reaching MaxDeltas by
// count with few bytes, merge their deltas into one instead of folding
// into the base: the base tables stay as they were, the root lists no
// more than the bound, and every value, a delete shadowing the base
// among them, reads as committed.
func TestMergeDeltas(t *testing.T) {
	ctx := context.Background()
	s, err := Open(ctx, mem.NewBucket(), shards.NewShardID(), testSchema, Options{MaxDeltas: 4, Check: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ruleDo(t, s, func(tx *Tx) error { return tx.Put(ruleFam, ruleKey(0), []byte("base")) })
	if err := s.Fold(ctx); err != nil {
		t.Fatal(err)
	}
	base := rulePin(t, s)
	if len(base.root.Deltas) != 0 || len(base.root.Families) == 0 {
		t.Fatalf("after Fold the root lists %d deltas and %d families", len(base.root.Deltas), len(base.root.Families))
	}
	const commits = 20
	for i := 1; i <= commits; i++ {
		ruleDo(t, s, func(tx *Tx) error {
			if i == 7 {
				if err := tx.Delete(ruleFam, ruleKey(0)); err != nil {
					return err
				}
			}
			return tx.Put(ruleFam, ruleKey(i), []byte{byte(i)})
		})
	}
	sn := rulePin(t, s)
	// How the folds fall depends on timing: a fold the leader runs between
	// batches may land before or after the next commit, and a merge that
	// would keep more than MaxDeltas/2 older tiers folds into the base by
	// design. What holds whatever the timing: merges outnumber the folds
	// into the base after Fold's own, and the base changed only if such a
	// fold was counted.
	st := s.CommitStats()
	if st.Merges == 0 || st.Folds < 1 || st.Folds-1 >= st.Merges {
		t.Fatalf("counted %d folds and %d merges: want Fold's one, and more merges than later folds", st.Folds, st.Merges)
	}
	if st.Folds == 1 && !slices.Equal(sn.root.Families, base.root.Families) {
		t.Fatalf("the base changed without a fold: %+v, was %+v", sn.root.Families, base.root.Families)
	}
	if n := len(sn.root.Deltas); n > 2*s.opts.MaxDeltas || n >= commits {
		t.Fatalf("the root lists %d deltas after %d commits, bound %d", n, commits, 2*s.opts.MaxDeltas)
	}
	merged := false
	for _, d := range sn.root.Deltas {
		merged = merged || d.Ref.Count > 1
	}
	if !merged && st.Folds == 1 { // a later fold into the base drops the merged deltas
		t.Fatalf("no delta holds more than one commit's record: %+v", sn.root.Deltas)
	}
	if _, ok, err := sn.Get(ctx, ruleFam, ruleKey(0)); err != nil || ok {
		t.Fatalf("the deleted base record: found %v, %v", ok, err)
	}
	for i := 1; i <= commits; i++ {
		v, ok, err := sn.Get(ctx, ruleFam, ruleKey(i))
		if err != nil || !ok || !bytes.Equal(v, []byte{byte(i)}) {
			t.Fatalf("record %d: %q, %v, %v", i, v, ok, err)
		}
	}
}

// TestMergeKeepsOlderTiers checks that a merge leaves out an older delta
// at least as large as everything newer (it would be rewritten at every
// merge otherwise), and that it folds into the base instead when the
// kept deltas would be more than MaxDeltas/2.
func TestMergeKeepsOlderTiers(t *testing.T) {
	ctx := context.Background()
	b := mem.NewBucket()
	id := shards.NewShardID()
	w, err := Open(ctx, b, id, testSchema, Options{MaxDeltaBytes: 64 << 20})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	ruleDo(t, w, func(tx *Tx) error { return tx.Put(ruleFam, ruleKey(1000), bytes.Repeat([]byte("b"), 3000)) })
	for i := range 4 {
		ruleDo(t, w, func(tx *Tx) error { return tx.Put(ruleFam, ruleKey(i), []byte{byte(i)}) })
	}
	build := func(o Options) (*Snapshot, *candidate) {
		t.Helper()
		s, err := Open(ctx, b, id, testSchema, o)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		sn := rulePin(t, s)
		c, err := s.build(ctx, sn, putValues(t, 100, 1, 10), newNonce(), foldDue, time.Now(), nil)
		if err != nil {
			t.Fatal(err)
		}
		return sn, c
	}
	sn, c := build(Options{MaxDeltas: 4})
	// Newest first: the four puts, the big one, the genesis delta.
	big := sn.root.Deltas[len(sn.root.Deltas)-2]
	if big.Ref.Size < 3000 {
		t.Fatalf("the parent's deltas %+v: no big one second oldest", sn.root.Deltas)
	}
	if got := c.root.Deltas; len(got) != 3 || got[1] != big || got[2] != sn.root.Deltas[len(sn.root.Deltas)-1] {
		t.Fatalf("merged root lists %+v, want the merged delta, then %+v and the genesis delta", got, big)
	}
	if !slices.Equal(c.root.Families, sn.root.Families) || slices.Contains(c.superseded, big.Ref.Hash) {
		t.Fatalf("the merge changed the base or superseded the kept delta")
	}
	if _, c := build(Options{MaxDeltas: 2}); len(c.root.Deltas) != 0 {
		t.Fatalf("with MaxDeltas 2 (one kept at most) the fold lists %d deltas, want a fold into the base", len(c.root.Deltas))
	}
	if _, c := build(Options{MaxDeltas: 4, MergeBytes: -1}); len(c.root.Deltas) != 0 {
		t.Fatalf("with merges off the fold lists %d deltas, want a fold into the base", len(c.root.Deltas))
	}
}

// TestBuildDeltaBoundsCompressed checks the lone batch's bounds where the
// shard compresses its deltas: the encoded delta, not the records, must
// stay within loneDeltaFactor × MaxDeltaBytes, so a batch of records
// five times the bound that compress well is listed (as a thousand
// served puts are), one whose delta stays large is folded, and one whose
// records pass loneRawFactor × the bound folds before it is encoded. On a
// shard that does not compress, the records' size decides, as before.
func TestBuildDeltaBoundsCompressed(t *testing.T) {
	ctx := context.Background()
	const bound = 4096
	compressing := testSchema
	compressing.CompressFrom = testSchema.Marker.ValueFormatVersion
	build := func(sc Schema, st *batchState) (folded bool) {
		t.Helper()
		s, err := Open(ctx, mem.NewBucket(), shards.NewShardID(), sc, Options{MaxDeltaBytes: bound})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		ruleDo(t, s, func(tx *Tx) error { return tx.Put(ruleFam, ruleKey(1), []byte("A")) })
		c, err := s.build(ctx, rulePin(t, s), st, newNonce(), keepDeltas, time.Now(), nil)
		if err != nil {
			t.Fatal(err)
		}
		return len(c.root.Deltas) == 0
	}
	random := func(n, size int) *batchState {
		st := newBatchState(testSchema.Families)
		for i := range n {
			v := make([]byte, size)
			rand.Read(v)
			if err := st.put(ruleFam, ruleKey(100+i), v); err != nil {
				t.Fatal(err)
			}
		}
		return st
	}
	if build(compressing, putValues(t, 100, 20, 1000)) {
		t.Error("a batch of 5 × the bound that compresses well was folded")
	}
	if !build(testSchema, putValues(t, 100, 20, 1000)) {
		t.Error("a batch of 5 × the bound on a shard that does not compress was listed")
	}
	if !build(compressing, random(20, 1000)) {
		t.Error("a batch whose compressed delta is 5 × the bound was listed")
	}
	if !build(compressing, putValues(t, 100, 140, 1000)) {
		t.Error("a batch of records past loneRawFactor × the bound was listed")
	}
}

// TestNoDeferToAWriterThatDoesNotCarry: a call leaves its commit to the
// replica that wrote the head last only if that head says its writer
// lists intents; a lone writer's head says it does not, and the call
// competes at once instead of waiting for a listing that may be ten
// seconds away.
func TestNoDeferToAWriterThatDoesNotCarry(t *testing.T) {
	ctx := context.Background()
	s, err := Open(ctx, mem.NewBucket(), shards.NewShardID(), carrierSchema, Options{MinCommitInterval: time.Millisecond, Intents: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ruleDo(t, s, func(tx *Tx) error { return tx.Put(ruleFam, ruleKey(1), []byte("A")) })
	pinned := rulePin(t, s)
	if pinned.head.Format != HeadFormat || pinned.head.Carrier {
		t.Fatalf("a lone writer's head: format %s, carrier %v; want %s, false", pinned.head.Format, pinned.head.Carrier, HeadFormat)
	}
	for _, carrier := range []bool{false, true} {
		h := *pinned.head
		h.Carrier = carrier
		s.mu.Lock()
		s.othersSeen = time.Now()
		s.headWritten = s.othersSeen
		s.mu.Unlock()
		c := &call{intent: "an intent"}
		if got := s.leaveToCarrier(ctx, &Snapshot{head: &h, root: pinned.root}, []*call{c}); got != carrier {
			t.Errorf("head saying carrier %v: leaveToCarrier = %v", carrier, got)
		}
	}
}

// TestCarrierStaysContended checks that a carrier that keeps winning the
// head, and so sees no other replica's head write, stays contended while
// the others publish intents: its heads go on saying it carries. Once
// contendedFor had passed since it last saw another's head write, its
// heads said it did not, and every replica left waiting for it competed
// for the head at once.
func TestCarrierStaysContended(t *testing.T) {
	ctx := context.Background()
	b := mem.NewBucket()
	s, err := Open(ctx, b, shards.NewShardID(), carrierSchema, Options{MinCommitInterval: time.Millisecond, Intents: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ruleDo(t, s, func(tx *Tx) error { return tx.Put(ruleFam, ruleKey(1), []byte("A")) })
	s.mu.Lock()
	long := time.Now().Add(-2 * contendedFor)
	s.othersSeen, s.intentsSeen = long, long
	s.mu.Unlock()
	if s.contended() {
		t.Fatal("contended with no other writer seen for two contendedFor")
	}
	now := time.Now().UnixMilli()
	body, err := encodeIntent(time.UnixMilli(now), []intentCmd{{RequestID: "r", Kind: "k", Payload: []byte("p")}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Put(ctx, s.layout.Intent(now, [8]byte{1}), body, bucket.IfAbsent()); err != nil {
		t.Fatal(err)
	}
	foreign, err := s.pendingIntents(ctx, nil)
	if err != nil || len(foreign) != 1 {
		t.Fatalf("pendingIntents: %d intents, %v; want 1", len(foreign), err)
	}
	if !s.contended() {
		t.Fatal("not contended after reading another replica's intent")
	}
	h := Head{Marker: rulePin(t, s).head.Marker}
	raw, err := s.encodeOwnHead(&h)
	if err != nil {
		t.Fatal(err)
	}
	if !h.Carrier || len(raw) == 0 {
		t.Fatalf("the head it would write says carrier %v; want true", h.Carrier)
	}
}

// TestFoldCallLeavesThePreparedFold checks that the leader's fold call,
// finding no prepared fold to install on a root past the delta bounds,
// folds inline only when no fold is being prepared, or when the
// leader's own fold is due (folding). A prepared fold hands itself to
// the leader with a fold call; when a commit installed it first and
// another fold was being prepared, the call folded inline: seconds with
// the puts riding along held, and the fold being prepared dropped, its
// own hand-off then folding inline again.
func TestFoldCallLeavesThePreparedFold(t *testing.T) {
	ctx := context.Background()
	const bound = 4096
	w, s := boundedPair(t, bound)
	ruleDo(t, w, func(tx *Tx) error {
		for i := range 6 {
			if err := tx.Put(ruleFam, ruleKey(200+i), bytes.Repeat([]byte("x"), 1000)); err != nil {
				return err
			}
		}
		return nil
	})
	over := rulePin(t, s)
	if !s.overDeltas(over.root, 1) {
		t.Fatalf("the root lists %d bytes of deltas, want over %d", over.root.DeltaBytes(), bound)
	}
	floor, err := over.Floor(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		preparing, folding bool
		want               foldMode
	}{
		{preparing: true, want: keepDeltas},
		{preparing: true, folding: true, want: foldDue},
		{want: foldDue},
	} {
		s.mu.Lock()
		s.preparing, s.folding = tc.preparing, tc.folding
		s.mu.Unlock()
		c := &call{ctx: ctx, fold: true, done: make(chan struct{})}
		ab := &attemptBatch{s: s, sn: over, calls: []*call{c}, state: newBatchState(s.fams), outs: make([]outcome, 1),
			at: applyClock{seq: over.head.Sequence + 1, now: time.Now(), floor: floor}}
		if err := ab.applyAll(ctx, nil); err != nil {
			t.Fatal(err)
		}
		if ab.fold != tc.want {
			t.Errorf("preparing %v, folding %v: the fold call's mode is %v, want %v", tc.preparing, tc.folding, ab.fold, tc.want)
		}
	}
	s.mu.Lock()
	s.preparing, s.folding = false, false
	s.mu.Unlock()
}

// TestCachesWithDeltas: NewCachesWithDeltas gives the delta segments the
// share asked for, kept between NewCaches's (3/32 of the budget) and a
// half, and the caches together no more than the budget.
func TestCachesWithDeltas(t *testing.T) {
	const mib = 1 << 20
	for _, tc := range []struct{ budget, deltas, want int64 }{
		{512 * mib, 192 * mib, 192 * mib},
		{512 * mib, 0, 48 * mib},
		{512 * mib, 4096 * mib, 256 * mib},
		{0, 192 * mib, 192 * mib}, // the default budget, 512 MiB
	} {
		c := NewCachesWithDeltas(tc.budget, tc.deltas)
		if got := c.deltas.Stats().Budget; got != tc.want {
			t.Errorf("NewCachesWithDeltas(%d, %d): deltas %d, want %d", tc.budget, tc.deltas, got, tc.want)
		}
		budget := tc.budget
		if budget == 0 {
			budget = DefaultCacheBytes
		}
		if got := c.Budget(); got > budget || got < budget-32 {
			t.Errorf("NewCachesWithDeltas(%d, %d): %d in all, want %d less rounding", tc.budget, tc.deltas, got, budget)
		}
	}
}
