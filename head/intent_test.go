package head_test

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cairnstore/cairn/bucket"
	"github.com/cairnstore/cairn/bucket/counting"
	"github.com/cairnstore/cairn/bucket/latency"
	"github.com/cairnstore/cairn/bucket/mem"
	"github.com/cairnstore/cairn/head"
	"github.com/cairnstore/cairn/shards"
)

// appendKind is a data command that appends its payload's item to the
// list under its payload's key, and refuses the item "reject".
const appendKind = "test.append"

func appendPayload(key int, item string) []byte {
	return append(binary.BigEndian.AppendUint32(nil, uint32(key)), item...)
}

func handleAppend(s *head.Store) {
	f := rqFamilies[0]
	s.Handle(appendKind, func(tx *head.Tx, payload []byte) ([]byte, error) {
		key := rqKey(f, int(binary.BigEndian.Uint32(payload[:4])))
		item := string(payload[4:])
		if item == "reject" {
			return nil, &head.Rejected{Value: []byte("refused " + item)}
		}
		v, _, err := tx.Get(f, key)
		if err != nil {
			return nil, err
		}
		nv := string(v) + item + ";"
		if err := tx.Put(f, key, []byte(nv)); err != nil {
			return nil, err
		}
		return []byte(nv), nil
	})
}

// intentReplicas opens n Stores of one new shard over one memory store,
// with intents on, the head paced at interval (and its writes limited
// to one an interval), each request taking perRequest.
func intentReplicas(t *testing.T, n int, interval, perRequest time.Duration) []*head.Store {
	return intentReplicasOver(t, n, interval, perRequest, nil)
}

// intentReplicasOver is intentReplicas with replica i's bucket wrapped
// by wrap (nil: none).
func intentReplicasOver(t *testing.T, n int, interval, perRequest time.Duration, wrap func(i int, b bucket.Bucket) bucket.Bucket) []*head.Store {
	t.Helper()
	return intentReplicasOf(t, head.SchemaForTest, n, interval, perRequest, wrap)
}

// intentReplicasOf is intentReplicasOver with the shard of schema sc.
func intentReplicasOf(t *testing.T, sc head.Schema, n int, interval, perRequest time.Duration, wrap func(i int, b bucket.Bucket) bucket.Bucket) []*head.Store {
	t.Helper()
	store := mem.NewStore()
	id := shards.NewShardID()
	var stores []*head.Store
	for i := range n {
		mb, _ := mem.New(store, "")
		var lb bucket.Bucket = latency.New(mb, latency.Options{PerRequest: perRequest, WritesPerSecondPerObject: float64(time.Second / interval)})
		if wrap != nil {
			lb = wrap(i, lb)
		}
		s, err := head.Open(context.Background(), lb, id, sc, head.Options{MinCommitInterval: interval, Intents: true})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		handleAppend(s)
		stores = append(stores, s)
	}
	return stores
}

// aheadOf initializes the shard through a, pins it through b, then
// commits through a: b has seen another writer's head write.
func aheadOf(t *testing.T, a, b *head.Store) {
	t.Helper()
	ctx := context.Background()
	if err := a.Initialize(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Pin(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Do(ctx, head.Command{Kind: appendKind, Payload: appendPayload(0, "a0")}); err != nil {
		t.Fatal(err)
	}
}

// TestIntentsShareTheHead: replicas that share one head under a write
// limit of a few writes a second, each offering commands as fast as it
// can, all get every command applied exactly once, through intents that
// the winner of each head write carries, and none is starved.
func TestIntentsShareTheHead(t *testing.T) {
	// Whether a replica defers to another, and so whether any command
	// is carried, depends on timing: a run on a loaded machine may carry
	// none, so the scenario runs up to three times for that check; every
	// run must apply each command exactly once within the write limit.
	for run := 1; ; run++ {
		if carried := shareTheHead(t); carried > 0 {
			return
		}
		if run == 3 {
			t.Fatal("in three runs no replica carried another's commands")
		}
	}
}

// shareTheHead runs the scenario of TestIntentsShareTheHead once and
// returns how many commands a replica carried for another.
func shareTheHead(t *testing.T) int64 {
	const (
		replicas = 4
		perRep   = 120
		interval = 100 * time.Millisecond
	)
	stores := intentReplicas(t, replicas, interval, 2*time.Millisecond)
	if err := stores[0].Initialize(context.Background()); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var wg sync.WaitGroup
	errs := make(chan error, replicas*perRep)
	start := time.Now()
	for r, s := range stores {
		for i := range perRep {
			wg.Go(func() {
				time.Sleep(time.Duration(i) * 2 * time.Second / perRep) // about 2 s of offered load
				item := fmt.Sprintf("r%d-%d", r, i)
				key := i % 5
				res, err := s.Do(ctx, head.Command{Kind: appendKind, Payload: appendPayload(key, item)})
				switch {
				case err != nil:
					errs <- fmt.Errorf("%s: %w", item, err)
				case !strings.Contains(string(res.Value), item+";"):
					errs <- fmt.Errorf("%s: result %q lacks it", item, res.Value)
				}
			})
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	took := time.Since(start)
	sn, err := stores[0].Pin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]int{}
	for key := range 5 {
		v, _, err := sn.Get(ctx, rqFamilies[0], rqKey(rqFamilies[0], key))
		if err != nil {
			t.Fatal(err)
		}
		for _, item := range strings.Split(strings.TrimSuffix(string(v), ";"), ";") {
			seen[item]++
		}
	}
	for r := range replicas {
		for i := range perRep {
			if n := seen[fmt.Sprintf("r%d-%d", r, i)]; n != 1 {
				t.Errorf("r%d-%d applied %d times", r, i, n)
			}
		}
	}
	var published, carried int64
	for _, s := range stores {
		p, c := s.IntentStats()
		published, carried = published+p, carried+c
	}
	t.Logf("%d commands from %d replicas in %v: %d commits, %d intents published, %d commands carried by another replica",
		replicas*perRep, replicas, took.Round(time.Millisecond), sn.Sequence(), published, carried)
	if max := uint64(took/interval) + 3; sn.Sequence() > max {
		t.Errorf("%d commits in %v, more than the write limit allows (%d)", sn.Sequence(), took, max)
	}
	return carried
}

// TestIntentRejectionIsRecorded: a data command its handler refuses ends
// with the Rejected refusal, and an exact retry gets the same refusal
// from the dedupe record.
func TestIntentRejectionIsRecorded(t *testing.T) {
	ctx := context.Background()
	s := open(t, mem.NewBucket(), shards.NewShardID(), head.Options{Intents: true})
	handleAppend(s)
	cmd := head.Command{RequestID: "req-1", Kind: appendKind, Payload: appendPayload(1, "reject")}
	for try := range 2 {
		_, err := s.Do(ctx, cmd)
		var rej *head.Rejected
		if !errors.As(err, &rej) || string(rej.Value) != "refused reject" {
			t.Fatalf("try %d: %v, want the refusal", try, err)
		}
	}
	if _, err := s.Do(ctx, head.Command{Kind: "unknown"}); err == nil {
		t.Fatal("a command of an unknown kind was accepted")
	}
}

// TestIntentCancelledIsUnknown: a caller that gives up while its command's
// intent is out is told the outcome is unknown, never that it was
// cancelled: another replica may still apply the intent.
func TestIntentCancelledIsUnknown(t *testing.T) {
	const interval = 200 * time.Millisecond
	stores := intentReplicas(t, 2, interval, time.Millisecond)
	a, b := stores[0], stores[1]
	ctx := context.Background()
	// b sees a write the head after it pinned, so it publishes its
	// commands as intents and leaves them to a.
	aheadOf(t, a, b)
	if _, err := b.Pin(ctx); err != nil {
		t.Fatal(err)
	}
	short, cancel := context.WithTimeout(ctx, interval/2)
	defer cancel()
	_, err := b.Do(short, head.Command{Kind: appendKind, Payload: appendPayload(1, "b0")})
	published, _ := b.IntentStats()
	if published == 0 {
		t.Fatalf("b published no intent (Do: %v)", err)
	}
	if !errors.Is(err, head.ErrUnknownOutcome) {
		t.Fatalf("a cancelled call whose intent is out: %v, want ErrUnknownOutcome", err)
	}
}

// TestBatchesBoundedByBytes: a group commit takes no more data commands
// than MaxBatchBytes of payload allows (and always one), whatever
// MaxBatch allows; every command still applies once.
func TestBatchesBoundedByBytes(t *testing.T) {
	ctx := context.Background()
	lb := latency.New(mem.NewBucket(), latency.Options{PerRequest: 2 * time.Millisecond})
	// No fold rides with a batch here (its call would count in the batch).
	s := open(t, lb, shards.NewShardID(), head.Options{MaxBatchBytes: 4 << 10, MaxDeltas: 1000, MaxDeltaBytes: 1 << 30})
	handleAppend(s)
	const calls, size = 64, 1 << 10 // four commands fill a batch's bytes
	var wg sync.WaitGroup
	for i := range calls {
		wg.Go(func() {
			item := fmt.Sprintf("%03d%s", i, strings.Repeat("x", size-4-3))
			if _, err := s.Do(ctx, head.Command{Kind: appendKind, Payload: appendPayload(i%4, item)}); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	st := s.CommitStats()
	for i, n := range st.BatchSizes {
		if n > 0 && head.BatchSizeBounds[i] > 4 {
			t.Errorf("%d batches of more than %d commands (at most 4 fit in 4 KiB): %v", n, head.BatchSizeBounds[i-1], st)
		}
	}
	if st.Commands < calls {
		t.Errorf("batches held %d commands, want at least %d", st.Commands, calls)
	}
	sn, err := s.Pin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	items := 0
	for key := range 4 {
		v, _, err := sn.Get(ctx, rqFamilies[0], rqKey(rqFamilies[0], key))
		if err != nil {
			t.Fatal(err)
		}
		items += strings.Count(string(v), ";")
	}
	if items != calls {
		t.Errorf("%d items applied, want %d", items, calls)
	}
}

// slowDeletes holds every Delete of an intent until released, and counts
// them by key.
type slowDeletes struct {
	bucket.Bucket
	mu      sync.Mutex
	deletes map[string]int
	release chan struct{}
}

func (s *slowDeletes) Delete(ctx context.Context, key string, cond bucket.Condition) error {
	if strings.Contains(key, "/intents/") {
		s.mu.Lock()
		s.deletes[key]++
		s.mu.Unlock()
		select {
		case <-s.release:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return s.Bucket.Delete(ctx, key, cond)
}

// TestIntentDeletedOnce: an intent a landed commit settled is deleted
// once, however many commits land while that delete is under way; they
// neither apply it again nor send another delete.
func TestIntentDeletedOnce(t *testing.T) {
	const interval = 100 * time.Millisecond
	ctx := context.Background()
	slow := &slowDeletes{deletes: map[string]int{}, release: make(chan struct{})}
	stores := intentReplicasOver(t, 2, interval, time.Millisecond, func(i int, b bucket.Bucket) bucket.Bucket {
		if i > 0 {
			return b
		}
		slow.Bucket = b
		return slow
	})
	a, b := stores[0], stores[1]
	defer close(slow.release)
	aheadOf(t, a, b)
	// b, behind a's head write, publishes its command as an intent that a
	// carries; a then commits more while the intent's delete hangs.
	done := make(chan error, 1)
	go func() {
		_, err := b.Do(ctx, head.Command{Kind: appendKind, Payload: appendPayload(1, "b0")})
		done <- err
	}()
	for i := range 8 {
		if _, err := a.Do(ctx, head.Command{Kind: appendKind, Payload: appendPayload(2, fmt.Sprintf("a%d", i+1))}); err != nil {
			t.Fatal(err)
		}
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if _, carried := a.IntentStats(); carried == 0 {
		t.Fatal("a carried no intent of b's")
	}
	for i := range 4 {
		if _, err := a.Do(ctx, head.Command{Kind: appendKind, Payload: appendPayload(3, fmt.Sprintf("x%d", i))}); err != nil {
			t.Fatal(err)
		}
	}
	slow.mu.Lock()
	defer slow.mu.Unlock()
	if len(slow.deletes) == 0 {
		t.Fatal("no intent was deleted")
	}
	for k, n := range slow.deletes {
		if n != 1 {
			t.Fatalf("intent %s: %d deletes", k, n)
		}
	}
}

// slowHeadAnswer answers a head write only some time after it took
// effect, as a local disk does while it syncs the head's directory.
type slowHeadAnswer struct {
	bucket.Bucket
	delay time.Duration
}

func (b *slowHeadAnswer) Put(ctx context.Context, key string, body []byte, cond bucket.Condition) (bucket.Attrs, error) {
	a, err := b.Bucket.Put(ctx, key, body, cond)
	if strings.HasSuffix(key, "/head") {
		time.Sleep(b.delay)
	}
	return a, err
}

// TestLoneStoreWritesNoIntents: a Store alone on its shard never takes
// its own head write for another writer's, even when its pins read that
// head before the write has returned (here the shard's first commit,
// which Initialize writes), so it publishes no intents.
func TestLoneStoreWritesNoIntents(t *testing.T) {
	ctx := context.Background()
	b := &slowHeadAnswer{Bucket: mem.NewBucket(), delay: 20 * time.Millisecond}
	s, err := head.Open(ctx, b, shards.NewShardID(), head.SchemaForTest, head.Options{Intents: true, Check: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	handleAppend(s)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			select {
			case <-stop:
				return
			default:
			}
			s.Pin(ctx) // before Initialize, a shard without a head: an error
			time.Sleep(time.Millisecond)
		}
	})
	if err := s.Initialize(ctx); err != nil {
		t.Fatal(err)
	}
	close(stop)
	wg.Wait()
	var calls sync.WaitGroup
	for i := range 20 {
		calls.Go(func() {
			if _, err := s.Do(ctx, head.Command{Kind: appendKind, Payload: appendPayload(i, "x")}); err != nil {
				t.Error(err)
			}
		})
	}
	calls.Wait()
	if published, _ := s.IntentStats(); published != 0 {
		t.Fatalf("a Store alone on its shard published %d intents", published)
	}
}

// TestProbeSharesTheHeadRead: a paced Store that knows of no other
// writer lists the intents at every commit, beside its read of the head
// (the commit's own, or the caller's that ExpectCommand announced): a
// call costs the listing's request but no round more than the same call
// on a Store that does not probe.
func TestProbeSharesTheHeadRead(t *testing.T) {
	for _, expect := range []bool{false, true} {
		t.Run(fmt.Sprintf("expect=%v", expect), func(t *testing.T) { probeSharesTheHeadRead(t, expect) })
	}
}

func probeSharesTheHeadRead(t *testing.T, expect bool) {
	ctx := context.Background()
	rounds := func(opts head.Options) counting.Stats {
		t.Helper()
		cnt := counting.New(latency.New(mem.NewBucket(), latency.Options{PerRequest: 2 * time.Millisecond}))
		s := warmAppendStore(t, cnt, head.SchemaForTest, opts)
		time.Sleep(20 * time.Millisecond) // past the pacing interval
		cnt.Reset()
		cmd := head.Command{Kind: appendKind, Payload: appendPayload(0, "x")}
		if expect {
			// A caller that reads before its command, as a Workbench tool does.
			s.ExpectCommand()
			var err error
			if cmd.At, err = s.Pin(ctx); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := s.Do(ctx, cmd); err != nil {
			t.Fatal(err)
		}
		return cnt.Snapshot()
	}
	probed := rounds(head.Options{MinCommitInterval: 10 * time.Millisecond, Intents: true})
	plain := rounds(head.Options{Intents: true}) // unpaced: a batch of one is not probed
	if probed.List.Requests != 1 || plain.List.Requests != 0 {
		t.Fatalf("listings: paced %d, unpaced %d; want 1 and 0", probed.List.Requests, plain.List.Requests)
	}
	if probed.Rounds > plain.Rounds {
		t.Errorf("a probed call took %d rounds, one without a probe %d: the listing took a round of its own", probed.Rounds, plain.Rounds)
	}
}

// warmAppendStore opens a Store of schema sc on a new shard of b, closed
// when the test ends, initializes it and commits one append through it.
func warmAppendStore(t *testing.T, b bucket.Bucket, sc head.Schema, opts head.Options) *head.Store {
	t.Helper()
	ctx := context.Background()
	s, err := head.Open(ctx, b, shards.NewShardID(), sc, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	handleAppend(s)
	if err := s.Initialize(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Do(ctx, head.Command{Kind: appendKind, Payload: appendPayload(0, "warm")}); err != nil {
		t.Fatal(err)
	}
	return s
}

// TestLoneWriterListsSeldom: in a shard whose heads say whether their
// writer carries (HeadFormat), a paced Store alone on its head writes
// heads that say it does not and, for commits of one call, lists the
// intents only every loneProbeEvery, not at every commit: a call there
// is its head read, its staged objects and its head write. A commit of
// several calls still lists (a writer that takes every turn would
// otherwise starve a replica that competes for them). In a shard of
// HeadFormatV2 every commit lists, since its readers may be waiting on
// it.
func TestLoneWriterListsSeldom(t *testing.T) {
	ctx := context.Background()
	const calls = 12
	lists := func(sc head.Schema) (int64, *head.Head, int64) {
		t.Helper()
		cnt := counting.New(mem.NewBucket())
		s := warmAppendStore(t, cnt, sc, head.Options{MinCommitInterval: 5 * time.Millisecond, Intents: true})
		cnt.Reset()
		for i := range calls {
			s.ExpectCommand() // as a Workbench write tool does
			if _, err := s.Do(ctx, head.Command{Kind: appendKind, Payload: appendPayload(i, "x")}); err != nil {
				t.Fatal(err)
			}
		}
		h, _, err := head.ReadHead(ctx, cnt, s.Layout(), sc.Marker)
		if err != nil {
			t.Fatal(err)
		}
		single := cnt.Snapshot().List.Requests
		// Then commits of several calls each.
		cnt.Reset()
		var wg sync.WaitGroup
		for i := range calls {
			wg.Go(func() {
				if _, err := s.Do(ctx, head.Command{Kind: appendKind, Payload: appendPayload(i, "y")}); err != nil {
					t.Error(err)
				}
			})
		}
		wg.Wait()
		if st := s.CommitStats(); st.Commands <= st.Batches {
			t.Fatalf("%d commands in %d batches: no batch of several calls", st.Commands, st.Batches)
		}
		return single, h, cnt.Snapshot().List.Requests
	}
	v3, h3, busy3 := lists(head.CarrierSchemaForTest)
	v2, h2, _ := lists(head.SchemaForTest)
	t.Logf("listings over %d calls: %d with heads of %s, %d with heads of %s; then %d over %d concurrent calls with heads of %s", calls, v3, h3.Format, v2, h2.Format, busy3, calls, h3.Format)
	if busy3 == 0 {
		t.Errorf("commits of several calls in a shard of %s listed no intents", head.HeadFormat)
	}
	if h3.Format != head.HeadFormat || h3.Carrier || h2.Format != head.HeadFormatV2 {
		t.Fatalf("heads: %s carrier %v, %s; want %s carrier false, %s", h3.Format, h3.Carrier, h2.Format, head.HeadFormat, head.HeadFormatV2)
	}
	if v3 != 0 || v2 < calls {
		t.Fatalf("listings: %d in a shard of %s, %d in one of %s; want 0 and at least %d", v3, head.HeadFormat, v2, head.HeadFormatV2, calls)
	}
}

// TestNewcomerJoinsALoneWriter: a replica that starts beside a lone
// writer of HeadFormat heads, which does not list intents for a commit
// of one call, still gets every command applied once, and soon, while
// the writer keeps committing: it competes for the head instead of
// waiting for a carrier, and its head write tells the writer of it; or,
// when the writer takes every turn with commits of several calls, the
// writer's listing finds its intents. From then on heads say their
// writer carries.
func TestNewcomerJoinsALoneWriter(t *testing.T) {
	for _, load := range []int{1, 4} {
		t.Run(fmt.Sprintf("writers=%d", load), func(t *testing.T) { newcomerJoinsALoneWriter(t, load) })
	}
}

// newcomerJoinsALoneWriter has the lone replica commit from load
// goroutines at once.
func newcomerJoinsALoneWriter(t *testing.T, load int) {
	const interval = 100 * time.Millisecond
	stores := intentReplicasOf(t, head.CarrierSchemaForTest, 2, interval, interval/5, nil)
	lone, newcomer := stores[0], stores[1]
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := lone.Initialize(ctx); err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for g := range load {
		wg.Go(func() {
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				if _, err := lone.Do(ctx, head.Command{Kind: appendKind, Payload: appendPayload(10+g, fmt.Sprint("a", i))}); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	time.Sleep(5 * interval)
	if h, _, err := head.ReadHead(ctx, lone.Bucket(), lone.Layout(), head.CarrierSchemaForTest.Marker); err != nil || h.Carrier {
		t.Fatalf("the lone writer's head: %+v, %v; want carrier false", h, err)
	}
	began := time.Now()
	const n = 10
	for i := range n {
		if _, err := newcomer.Do(ctx, head.Command{Kind: appendKind, Payload: appendPayload(2, fmt.Sprint("b", i))}); err != nil {
			t.Fatal(err)
		}
	}
	took := time.Since(began)
	close(stop)
	wg.Wait()
	published, _ := newcomer.IntentStats()
	_, carried := lone.IntentStats()
	t.Logf("the newcomer's %d commands took %v (%.1f intervals each); it published %d intents, the lone writer carried %d", n, took, float64(took)/float64(n*interval), published, carried)
	sn, err := newcomer.Pin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	got, _, err := sn.Get(ctx, rqFamilies[0], rqKey(rqFamilies[0], 2))
	if err != nil {
		t.Fatal(err)
	}
	want := ""
	for i := range n {
		want += fmt.Sprint("b", i) + ";"
	}
	if string(got) != want {
		t.Fatalf("the newcomer's list is %q, want %q: a command lost or applied twice", got, want)
	}
	if h := sn.Head(); !h.Carrier {
		t.Errorf("after the newcomer's commands the head (sequence %d) says its writer does not carry", h.Sequence)
	}
	// A liveness bound, not a speed claim: a newcomer left to the lone
	// writer's backstop listing would wait loneProbeEvery (10 s).
	if took > 8*time.Second {
		t.Errorf("the newcomer's %d commands took %v: it waited on a writer that does not list", n, took)
	}
}

// TestCarrierCarriesAfterItsOwnCommands: a replica that carried another's
// intents goes on carrying them once it has no command of its own, so
// the other replica, which leaves its commands to the carrier, need not
// wait for the carrier's silence and take the head over itself.
func TestCarrierCarriesAfterItsOwnCommands(t *testing.T) {
	const interval = 100 * time.Millisecond
	stores := intentReplicas(t, 2, interval, 2*time.Millisecond)
	a, b := stores[0], stores[1]
	aheadOf(t, a, b)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var wg sync.WaitGroup
	// a's own commands, in its first two intervals only.
	for i := range 4 {
		wg.Go(func() {
			time.Sleep(time.Duration(i) * interval / 2)
			if _, err := a.Do(ctx, head.Command{Kind: appendKind, Payload: appendPayload(1, fmt.Sprintf("a%d", i))}); err != nil {
				t.Error(err)
			}
		})
	}
	// b's, for twenty intervals.
	const bCommands = 200
	for i := range bCommands {
		wg.Go(func() {
			time.Sleep(time.Duration(i) * 20 * interval / bCommands)
			if _, err := b.Do(ctx, head.Command{Kind: appendKind, Payload: appendPayload(2, fmt.Sprintf("b%d", i))}); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	_, carried := a.IntentStats()
	bWrites := b.CommitStats().Landed
	t.Logf("a carried %d of b's %d commands in %d head writes; b wrote the head %d times", carried, bCommands, a.CommitStats().Landed, bWrites)
	if bWrites > 3 {
		t.Fatalf("b wrote the head %d times: a stopped carrying once its own commands were done", bWrites)
	}
}

// intentLimit refuses, across every replica, a write or delete of an
// intent within interval of the last one, as a store that limits the
// writes to one object does, and counts the deletes it refused.
type intentLimit struct {
	mu        sync.Mutex
	interval  time.Duration
	last      map[string]time.Time
	deletes   int
	throttled int
}

func (l *intentLimit) admit(key string, del bool) error {
	if !strings.Contains(key, "/intents/") {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	now := time.Now()
	if del {
		l.deletes++
	}
	if t, ok := l.last[key]; ok && now.Sub(t) < l.interval {
		if del {
			l.throttled++
		}
		return bucket.ErrThrottled
	}
	l.last[key] = now
	return nil
}

type intentLimited struct {
	bucket.Bucket
	l *intentLimit
}

func (b intentLimited) Put(ctx context.Context, key string, body []byte, cond bucket.Condition) (bucket.Attrs, error) {
	if err := b.l.admit(key, false); err != nil {
		return bucket.Attrs{}, err
	}
	return b.Bucket.Put(ctx, key, body, cond)
}

func (b intentLimited) Delete(ctx context.Context, key string, cond bucket.Condition) error {
	if err := b.l.admit(key, true); err != nil {
		return err
	}
	return b.Bucket.Delete(ctx, key, cond)
}

// TestIntentsDeletedAfterTheirInterval: a carried intent is deleted once
// the store's interval for its object has passed since it was published,
// so the store never refuses the delete (the intent would stay, to be
// listed and read again by every carrier).
func TestIntentsDeletedAfterTheirInterval(t *testing.T) {
	const interval = 100 * time.Millisecond
	limit := &intentLimit{interval: interval, last: map[string]time.Time{}}
	stores := intentReplicasOver(t, 2, interval, 2*time.Millisecond, func(_ int, b bucket.Bucket) bucket.Bucket {
		return intentLimited{b, limit}
	})
	a, b := stores[0], stores[1]
	aheadOf(t, a, b)
	ctx := context.Background()
	var wg sync.WaitGroup
	for i := range 40 {
		wg.Go(func() {
			time.Sleep(time.Duration(i) * interval / 4)
			if _, err := b.Do(ctx, head.Command{Kind: appendKind, Payload: appendPayload(2, fmt.Sprintf("b%d", i))}); err != nil {
				t.Error(err)
			}
		})
		if i%4 == 0 {
			if _, err := a.Do(ctx, head.Command{Kind: appendKind, Payload: appendPayload(1, fmt.Sprintf("a%d", i))}); err != nil {
				t.Fatal(err)
			}
		}
	}
	wg.Wait()
	time.Sleep(3 * interval) // the last deletes wait at most two intervals
	limit.mu.Lock()
	defer limit.mu.Unlock()
	t.Logf("%d intent deletes, %d refused", limit.deletes, limit.throttled)
	if limit.deletes == 0 {
		t.Fatal("no intent was deleted")
	}
	if limit.throttled > 0 {
		t.Fatalf("%d of %d intent deletes came within the store's interval of the intent's write", limit.throttled, limit.deletes)
	}
}

// headWrites records when each head write through a bucket was answered.
type headWrites struct {
	bucket.Bucket
	mu *sync.Mutex
	at *[]time.Time
}

func (b headWrites) Put(ctx context.Context, key string, body []byte, cond bucket.Condition) (bucket.Attrs, error) {
	a, err := b.Bucket.Put(ctx, key, body, cond)
	if err == nil && strings.HasSuffix(key, "/head") {
		b.mu.Lock()
		*b.at = append(*b.at, time.Now())
		b.mu.Unlock()
	}
	return a, err
}

// TestDeferringReplicaFollowsTheCarrier: a replica that leaves its
// commands to the carrier answers them as soon as it sees the carrier's
// head write (its requests read the head often, as a server's do), not a
// quarter of an interval later; and it publishes the commands that came
// while it waited before the carrier lists the intents for its next
// head write, so that they ride with it instead of the one after.
func TestDeferringReplicaFollowsTheCarrier(t *testing.T) {
	// A whole number of intervals a second (intentReplicas limits each
	// object's writes to that number), and long enough that a quarter of
	// one stands out from the scheduling noise.
	const interval = 500 * time.Millisecond
	var mu sync.Mutex
	var writes []time.Time
	stores := intentReplicasOver(t, 2, interval, 2*time.Millisecond, func(i int, b bucket.Bucket) bucket.Bucket {
		if i == 0 {
			return headWrites{Bucket: b, mu: &mu, at: &writes}
		}
		return b
	})
	a, b := stores[0], stores[1]
	aheadOf(t, a, b)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	polling, stopPolling := context.WithCancel(ctx)
	defer stopPolling()
	go func() { // b's requests pin the head, as a server's do
		for polling.Err() == nil {
			_, _ = b.Pin(polling)
			time.Sleep(5 * time.Millisecond)
		}
	}()
	var wg sync.WaitGroup
	for i := range 4 { // a's own commands: a carries from then on
		wg.Go(func() {
			time.Sleep(time.Duration(i) * interval / 2)
			if _, err := a.Do(ctx, head.Command{Kind: appendKind, Payload: appendPayload(1, fmt.Sprintf("a%d", i))}); err != nil {
				t.Error(err)
			}
		})
	}
	const bCommands, span = 120, 12 * interval
	latencies := make([]time.Duration, bCommands)
	answered := make([]time.Time, bCommands)
	for i := range bCommands {
		wg.Go(func() {
			time.Sleep(interval + time.Duration(i)*span/bCommands)
			began := time.Now()
			if _, err := b.Do(ctx, head.Command{Kind: appendKind, Payload: appendPayload(2, fmt.Sprintf("b%d", i))}); err != nil {
				t.Error(err)
			}
			answered[i] = time.Now()
			latencies[i] = answered[i].Sub(began)
		})
	}
	wg.Wait()
	stopPolling()
	if t.Failed() {
		return
	}
	// How long after the carrier's last head write before it each
	// command was answered.
	var after []time.Duration
	mu.Lock()
	for _, at := range answered {
		var last time.Time
		for _, w := range writes {
			if !w.After(at) {
				last = w
			}
		}
		if !last.IsZero() {
			after = append(after, at.Sub(last))
		}
	}
	mu.Unlock()
	slices.Sort(after)
	var sum time.Duration
	for _, l := range latencies {
		sum += l
	}
	mean := sum / bCommands
	_, carried := a.IntentStats()
	t.Logf("a carried %d of b's %d commands; answered a median %v after a's head write; mean latency %v (%.2f intervals)",
		carried, bCommands, after[len(after)/2], mean, float64(mean)/float64(interval))
	if carried < bCommands/2 {
		t.Fatalf("a carried %d of b's %d commands: b did not defer", carried, bCommands)
	}
	if m := after[len(after)/2]; m > interval/8 {
		t.Errorf("b answered its carried commands a median %v after the carrier's head write, more than %v", m, interval/8)
	}
	if mean > interval*13/10 {
		t.Errorf("b's commands took %v on average, more than 1.3 intervals: published after the carrier listed the intents", mean)
	}
}
