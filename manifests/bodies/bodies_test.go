package bodies_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cairnstore/cairn/bucket"
	"github.com/cairnstore/cairn/bucket/counting"
	"github.com/cairnstore/cairn/bucket/digest"
	"github.com/cairnstore/cairn/bucket/fault"
	"github.com/cairnstore/cairn/bucket/latency"
	"github.com/cairnstore/cairn/bucket/mem"
	"github.com/cairnstore/cairn/manifests"
	"github.com/cairnstore/cairn/manifests/bodies"
	"github.com/cairnstore/cairn/shards"
	"github.com/cairnstore/cairn/shards/shardstest"
)

var (
	root = [16]byte{0x20, 0x21}
	rev  = [16]byte{0x10, 0x11}
	op   = [16]byte{0x00, 0x01}
)

// fastRetry keeps the retry tests quick.
var fastRetry = bucket.RetryPolicy{Attempts: 4, Base: time.Millisecond, Max: 2 * time.Millisecond}

func newLayout(t *testing.T) shards.Layout {
	t.Helper()
	s, err := shards.NewSchema()
	if err != nil {
		t.Fatal(err)
	}
	return shards.NewLayout(s, shards.ShardID{0xaa})
}

// staging plans body in blocks of the store's size.
func staging(s *bodies.Store, body []byte) *bodies.Staging {
	return &bodies.Staging{
		Operation: op, Root: root, Revision: rev,
		Origin: bodies.Origin{Tool: "workbench_put_file", WorkbenchID: "wb", Path: "outputs/x"},
		Blocks: s.Plan(root, rev, body),
	}
}

func collect(ctx context.Context, s *bodies.Store, blocks []bodies.Block) ([]byte, error) {
	var out []byte
	err := s.Stream(ctx, blocks, func(b []byte) error {
		out = append(out, b...)
		return nil
	})
	return out, err
}

// TestLedgerBytes: the ledger's schema, members and bytes are the stored
// format; these are the bytes the Workbench wrote before the package
// existed.
func TestLedgerBytes(t *testing.T) {
	st := bodies.Staging{
		Operation: [16]byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15},
		Revision:  [16]byte{16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31},
		Root:      [16]byte{32, 33, 34, 35, 36, 37, 38, 39, 40, 41, 42, 43, 44, 45, 46, 47},
		Origin:    bodies.Origin{Tool: "workbench_put_file", WorkbenchID: "wb", Path: "outputs/x"},
		Blocks: []bodies.Block{
			{Index: 0, Key: "artifacts/k/0", Size: 2, Digest: digest.Sum([]byte("ab"))},
			{Index: 1, Key: "artifacts/k/1", Size: 1, Digest: digest.Sum([]byte("c"))},
		},
	}
	const tail = `"operation_id":"000102030405060708090a0b0c0d0e0f","path":"outputs/x","revision_id":"101112131415161718191a1b1c1d1e1f","root_id":"202122232425262728292a2b2c2d2e2f","schema":"cairn.staging_ledger.v1","tool":"workbench_put_file","workbench_id":"wb"}`
	for _, c := range []struct {
		blocks []bodies.Block
		want   string
	}{
		{st.Blocks, `{"objects":[{"digest_uri":"sha256:fb8e20fc2e4c3f248c60c39bd652f3c1347298bb977b8b4d5903b85055620603","key":"artifacts/k/0","length":2},{"digest_uri":"sha256:2e7d2c03a9507ae265ecf5b5356885a53393a2029d241394997265a1a25aefc6","key":"artifacts/k/1","length":1}],` + tail},
		{nil, `{"objects":[],` + tail},
	} {
		st.Blocks = c.blocks
		got, err := manifests.Encode(st.Ledger())
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != c.want {
			t.Fatalf("ledger bytes\n got %s\nwant %s", got, c.want)
		}
		l, err := bodies.DecodeStagingLedger(got)
		if err != nil {
			t.Fatal(err)
		}
		if again, _ := manifests.Encode(l); !bytes.Equal(again, got) {
			t.Fatalf("round trip: %s", again)
		}
		if _, err := bodies.DecodeStagingLedger(append(got[:len(got)-1:len(got)-1], ' ', '}')); err == nil {
			t.Fatal("non-canonical ledger decoded")
		}
	}
}

// TestStageThenStream: Stage writes the ledger naming every block, the
// blocks under the layout's keys, and Stream gives the body back.
func TestStageThenStream(t *testing.T) {
	ctx := t.Context()
	b := mem.NewBucket()
	layout := newLayout(t)
	s := bodies.New(b, layout, bodies.Options{BlockSize: 4})
	body := []byte("0123456789abcdefghi") // 5 blocks, the last of 3 bytes
	st := staging(s, body)
	if got := len(st.Blocks); got != 5 {
		t.Fatalf("%d blocks, want 5", got)
	}
	for i, blk := range st.Blocks {
		end := min(4*i+4, len(body))
		if blk.Index != uint64(i) || blk.Key != bodies.BlockKey(layout, root, rev, uint64(i)) || blk.Offset != 0 ||
			blk.Size != uint64(end-4*i) || blk.Digest != digest.Sum(body[4*i:end]) {
			t.Fatalf("block %d: %+v", i, blk)
		}
	}
	if _, err := s.Stage(ctx, st, body); err != nil {
		t.Fatal(err)
	}
	raw, _, err := b.Get(ctx, bodies.StagingKey(layout, op))
	if err != nil {
		t.Fatal(err)
	}
	l, err := bodies.DecodeStagingLedger(raw)
	if err != nil {
		t.Fatal(err)
	}
	if len(l.Objects) != 5 || l.Objects[4].Key != st.Blocks[4].Key || l.Objects[4].Length != 3 || l.Path != "outputs/x" {
		t.Fatalf("ledger %+v", l)
	}
	got, err := collect(ctx, s, st.Blocks)
	if err != nil || !bytes.Equal(got, body) {
		t.Fatalf("stream %q, %v", got, err)
	}

	// Staging again is harmless: every object is there with its bytes.
	if _, err := s.Stage(ctx, st, body); err != nil {
		t.Fatalf("stage again: %v", err)
	}
	// A ledger that differs is refused, for good.
	other := *st
	other.Origin.Path = "outputs/y"
	if err := s.WriteLedger(ctx, &other); !errors.Is(err, bucket.ErrPrecondition) || bucket.Transient(err) {
		t.Fatalf("different ledger: %v, want a final precondition failure", err)
	}
}

// TestRetryTransientWrite: a write that fails before it reaches the store,
// and one whose answer is lost after it landed, are both tried again; the
// second finds its own object and succeeds.
func TestRetryTransientWrite(t *testing.T) {
	ctx := t.Context()
	layout := newLayout(t)
	fb := fault.New(mem.NewBucket())
	cb := counting.New(fb)
	s := bodies.New(cb, layout, bodies.Options{BlockSize: 4, Retry: fastRetry})
	body := []byte("aaaabbbbcccc")
	st := staging(s, body)
	unavailable := fb.Inject(fault.Rule{Op: fault.OpPut, Key: st.Blocks[1].Key, Count: 1, Fault: fault.FailBefore(bucket.ErrUnavailable)})
	lost := fb.Inject(fault.Rule{Op: fault.OpPut, Key: st.Blocks[2].Key, Count: 1, Fault: fault.LoseResponse()})
	if _, err := s.Stage(ctx, st, body); err != nil {
		t.Fatal(err)
	}
	if unavailable.Fired() != 1 || lost.Fired() != 1 {
		t.Fatalf("faults fired %d and %d times", unavailable.Fired(), lost.Fired())
	}
	// The ledger and three blocks, two of them twice; one read to settle
	// the lost answer.
	st2 := cb.Snapshot()
	if st2.Put.Requests != 6 || st2.Get.Requests != 1 {
		t.Fatalf("%d PUTs and %d GETs, want 6 and 1", st2.Put.Requests, st2.Get.Requests)
	}
	got, err := collect(ctx, s, st.Blocks)
	if err != nil || !bytes.Equal(got, body) {
		t.Fatalf("stream %q, %v", got, err)
	}
}

// TestRetryGivesUp: a store that stays unavailable fails the write after
// the policy's tries.
func TestRetryGivesUp(t *testing.T) {
	fb := fault.New(mem.NewBucket())
	cb := counting.New(fb)
	s := bodies.New(cb, newLayout(t), bodies.Options{Retry: fastRetry})
	fb.Inject(fault.Rule{Op: fault.OpPut, Fault: fault.FailBefore(bucket.ErrUnavailable)})
	st := staging(s, []byte("x"))
	if _, err := s.Stage(t.Context(), st, []byte("x")); !errors.Is(err, bucket.ErrUnavailable) {
		t.Fatalf("stage: %v, want ErrUnavailable", err)
	}
	// The ledger and the block, each up to the policy's tries.
	if got := cb.Snapshot().Put.Requests; got != 2*int64(fastRetry.Attempts) {
		t.Fatalf("%d PUTs, want %d", got, 2*fastRetry.Attempts)
	}
}

// TestNoRetryOnDifferentBytes: a block key that holds other bytes is a
// precondition failure that is not transient, and is not tried again.
func TestNoRetryOnDifferentBytes(t *testing.T) {
	ctx := t.Context()
	inner := mem.NewBucket()
	cb := counting.New(inner)
	s := bodies.New(cb, newLayout(t), bodies.Options{Retry: fastRetry})
	body := []byte("mine")
	st := staging(s, body)
	if _, err := inner.Put(ctx, st.Blocks[0].Key, []byte("theirs"), bucket.Unconditional); err != nil {
		t.Fatal(err)
	}
	_, err := s.Stage(ctx, st, body)
	if !errors.Is(err, bucket.ErrPrecondition) || bucket.Transient(err) || errors.Is(err, bucket.ErrIntegrity) {
		t.Fatalf("stage onto other bytes: %v, want a precondition failure only", err)
	}
	// The ledger, the block once, and the read that compared.
	if got := cb.Snapshot(); got.Put.Requests != 2 || got.Get.Requests != 1 {
		t.Fatalf("%d PUTs and %d GETs, want 2 and 1", got.Put.Requests, got.Get.Requests)
	}
}

// TestUploadChecksPlan: Upload sends only bytes that match the plan, all
// of it.
func TestUploadChecksPlan(t *testing.T) {
	ctx := t.Context()
	b := mem.NewBucket()
	s := bodies.New(b, newLayout(t), bodies.Options{BlockSize: 4})
	st := staging(s, []byte("aaaabbbb"))
	for name, stream := range map[string]string{"other bytes": "aaaaBBBB", "short": "aaaa", "long": "aaaabbbbc"} {
		_, err := s.Upload(ctx, st, func(write func([]byte) error) error { return write([]byte(stream)) })
		if !errors.Is(err, bucket.ErrIntegrity) {
			t.Errorf("%s: %v, want ErrIntegrity", name, err)
		}
	}
	// In pieces of any size.
	_, err := s.Upload(ctx, st, func(write func([]byte) error) error {
		for _, p := range []string{"a", "aaab", "", "bb", "b"} {
			if err := write([]byte(p)); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if got, err := collect(ctx, s, st.Blocks); err != nil || string(got) != "aaaabbbb" {
		t.Fatalf("stream %q, %v", got, err)
	}
}

// TestPlannerMatchesPlan: planning a stream in pieces gives the blocks of
// planning it whole.
func TestPlannerMatchesPlan(t *testing.T) {
	s := bodies.New(mem.NewBucket(), newLayout(t), bodies.Options{BlockSize: 5})
	body := []byte(strings.Repeat("0123456789", 7))
	for _, piece := range []int{1, 3, 5, 7, 70} {
		p := s.NewPlanner(root, rev)
		for i := 0; i < len(body); i += piece {
			p.Write(body[i:min(i+piece, len(body))])
		}
		if got, want := p.Blocks(), s.Plan(root, rev, body); !reflect.DeepEqual(got, want) {
			t.Fatalf("pieces of %d: %+v, want %+v", piece, got, want)
		}
	}
	if got := s.Plan(root, rev, nil); len(got) != 0 {
		t.Fatalf("empty body: %+v", got)
	}
}

// TestDiscardOrder: Discard deletes every block, then the ledger; when a
// block delete fails, the ledger stays to name what remains.
func TestDiscardOrder(t *testing.T) {
	for _, failing := range []bool{false, true} {
		t.Run(fmt.Sprintf("failing=%t", failing), func(t *testing.T) {
			ctx := t.Context()
			layout := newLayout(t)
			store := mem.NewStore()
			inner, _ := mem.New(store, "")
			plain, _ := mem.New(store, "")
			fb := fault.New(inner)
			s := bodies.New(fb, layout, bodies.Options{BlockSize: 2})
			body := []byte("aabbccddeeffgghhiijj") // 10 blocks
			st := staging(s, body)
			if _, err := s.Stage(ctx, st, body); err != nil {
				t.Fatal(err)
			}
			if failing {
				fb.Inject(fault.Rule{Op: fault.OpDelete, Key: st.Blocks[3].Key, Fault: fault.FailBefore(bucket.ErrUnavailable)})
			}
			var mu sync.Mutex
			var deletes []string
			fb.Inject(fault.Rule{Op: fault.OpDelete, Fault: fault.HookAfter(func(_ context.Context, _ fault.Op, key string) error {
				mu.Lock()
				defer mu.Unlock()
				deletes = append(deletes, key)
				return nil
			})})
			err := s.Discard(ctx, st)
			ledger := bodies.StagingKey(layout, op)
			_, _, gerr := plain.Get(ctx, ledger)
			if failing {
				if !errors.Is(err, bucket.ErrUnavailable) {
					t.Fatalf("discard: %v, want ErrUnavailable", err)
				}
				if gerr != nil {
					t.Fatalf("ledger after a failed block delete: %v", gerr)
				}
				if slices.Contains(deletes, ledger) {
					t.Fatal("the ledger was deleted although a block remains")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if n := len(deletes); n != 11 || deletes[n-1] != ledger {
				t.Fatalf("deletes %v: want ten blocks, then the ledger", deletes)
			}
			if !errors.Is(gerr, bucket.ErrNotExist) {
				t.Fatalf("ledger after discard: %v", gerr)
			}
			page, err := plain.List(ctx, bucket.ListOptions{Prefix: bodies.ArtifactsPrefix(layout)})
			if err != nil || len(page.Objects) != 0 {
				t.Fatalf("blocks left: %v %v", page.Objects, err)
			}
		})
	}
}

// TestDropLedger deletes the ledger and leaves the blocks.
func TestDropLedger(t *testing.T) {
	ctx := t.Context()
	b := mem.NewBucket()
	layout := newLayout(t)
	s := bodies.New(b, layout, bodies.Options{BlockSize: 2})
	st := staging(s, []byte("aabb"))
	if _, err := s.Stage(ctx, st, []byte("aabb")); err != nil {
		t.Fatal(err)
	}
	if err := s.DropLedger(ctx, op); err != nil {
		t.Fatal(err)
	}
	if _, _, err := b.Get(ctx, bodies.StagingKey(layout, op)); !errors.Is(err, bucket.ErrNotExist) {
		t.Fatalf("ledger: %v", err)
	}
	if got, err := collect(ctx, s, st.Blocks); err != nil || string(got) != "aabb" {
		t.Fatalf("stream %q, %v", got, err)
	}
}

// TestStreamRequests: one GET per block; a body of up to Parallel blocks
// is one round, a longer one never has more than Parallel in flight. The
// GETs are held at a gate until as many as the case expects are in
// flight, so the counts hold however slowly the machine schedules them: a
// stream that waited for one GET before sending the next would never open
// the gate.
func TestStreamRequests(t *testing.T) {
	ctx := t.Context()
	gate := &getGate{Bucket: mem.NewBucket()}
	cb := counting.New(gate)
	s := bodies.New(cb, newLayout(t), bodies.Options{BlockSize: 8})
	for _, c := range []struct {
		blocks      int
		rounds      int64 // 0: not checked
		maxInFlight int64
	}{{1, 1, 1}, {7, 1, 7}, {8, 1, 8}, {20, 0, 8}} {
		body := bytes.Repeat([]byte("0123456789abcdef"), c.blocks)[:8*c.blocks]
		st := staging(s, body)
		st.Operation, st.Revision = [16]byte{byte(c.blocks)}, [16]byte{byte(c.blocks)}
		st.Blocks = s.Plan(root, st.Revision, body)
		if _, err := s.Stage(ctx, st, body); err != nil {
			t.Fatal(err)
		}
		cb.Reset()
		gate.expect(int(c.maxInFlight))
		got, err := collect(ctx, s, st.Blocks)
		if err != nil || !bytes.Equal(got, body) {
			t.Fatalf("%d blocks: stream %v", c.blocks, err)
		}
		if gate.timedOut.Load() {
			t.Fatalf("%d blocks: fewer than %d GETs were ever in flight at once", c.blocks, c.maxInFlight)
		}
		snap := cb.Snapshot()
		if snap.Total().Requests != int64(c.blocks) || snap.Get.Requests != int64(c.blocks) {
			t.Errorf("%d blocks: %+v, want %d GETs", c.blocks, snap, c.blocks)
		}
		if c.rounds != 0 && snap.Rounds != c.rounds {
			t.Errorf("%d blocks: %d rounds, want %d", c.blocks, snap.Rounds, c.rounds)
		}
		if snap.MaxInFlight > c.maxInFlight || (c.rounds != 0 && snap.MaxInFlight != c.maxInFlight) {
			t.Errorf("%d blocks: %d in flight at most, want %d", c.blocks, snap.MaxInFlight, c.maxInFlight)
		}
	}
}

// getGate holds every Get until want of them have arrived (or 10 s have
// passed: timedOut), then lets all through.
type getGate struct {
	bucket.Bucket
	mu       sync.Mutex
	want     int
	arrived  int
	open     chan struct{}
	timedOut atomic.Bool
}

func (g *getGate) expect(want int) {
	g.mu.Lock()
	g.want, g.arrived, g.open = want, 0, make(chan struct{})
	g.mu.Unlock()
	g.timedOut.Store(false)
}

func (g *getGate) Get(ctx context.Context, key string) ([]byte, bucket.Attrs, error) {
	g.mu.Lock()
	open := g.open
	if open != nil {
		g.arrived++
		if g.arrived == g.want {
			close(open)
		}
	}
	g.mu.Unlock()
	if open != nil {
		select {
		case <-open:
		case <-time.After(10 * time.Second):
			g.timedOut.Store(true)
		}
	}
	return g.Bucket.Get(ctx, key)
}

// TestStreamChecks: every block is checked before the caller sees it; the
// stream ends at the first bad one, and at the caller's error.
func TestStreamChecks(t *testing.T) {
	ctx := t.Context()
	b := mem.NewBucket()
	s := bodies.New(b, newLayout(t), bodies.Options{BlockSize: 4})
	body := []byte("aaaabbbbccccdddd")
	st := staging(s, body)
	if _, err := s.Stage(ctx, st, body); err != nil {
		t.Fatal(err)
	}

	// A slice of an object.
	part := []bodies.Block{{Key: st.Blocks[1].Key, Offset: 1, Size: 2, Digest: digest.Sum([]byte("bb"))}}
	if got, err := collect(ctx, s, part); err != nil || string(got) != "bb" {
		t.Fatalf("slice: %q, %v", got, err)
	}
	past := []bodies.Block{{Key: st.Blocks[1].Key, Offset: 3, Size: 2, Digest: digest.Sum([]byte("bb"))}}
	if _, err := collect(ctx, s, past); !errors.Is(err, bucket.ErrIntegrity) {
		t.Fatalf("slice past the object: %v, want ErrIntegrity", err)
	}

	// A damaged block: the caller saw the blocks before it only.
	if _, err := b.Put(ctx, st.Blocks[2].Key, []byte("CCCC"), bucket.Unconditional); err != nil {
		t.Fatal(err)
	}
	got, err := collect(ctx, s, st.Blocks)
	if !errors.Is(err, bucket.ErrIntegrity) || string(got) != "aaaabbbb" {
		t.Fatalf("damaged: %q, %v", got, err)
	}

	// A missing block.
	if err := b.Delete(ctx, st.Blocks[2].Key, bucket.Unconditional); err != nil {
		t.Fatal(err)
	}
	if _, err := collect(ctx, s, st.Blocks); !errors.Is(err, bucket.ErrNotExist) {
		t.Fatalf("missing: %v, want ErrNotExist", err)
	}

	// The caller's error ends the stream.
	stop := errors.New("stop")
	n := 0
	err = s.Stream(ctx, st.Blocks, func([]byte) error {
		n++
		return stop
	})
	if !errors.Is(err, stop) || n != 1 {
		t.Fatalf("caller's error: %v after %d blocks", err, n)
	}
}

// TestStageOneRound: the ledger is sent beside the blocks, so a staging
// of a body of at most Parallel blocks costs one round.
func TestStageOneRound(t *testing.T) {
	cb := counting.New(latency.New(mem.NewBucket(), latency.Options{PerRequest: 20 * time.Millisecond}))
	s := bodies.New(cb, newLayout(t), bodies.Options{BlockSize: 4})
	body := []byte("0123456789abcdef") // 4 blocks
	if _, err := s.Stage(t.Context(), staging(s, body), body); err != nil {
		t.Fatal(err)
	}
	if st := cb.Snapshot(); st.Put.Requests != 5 || st.Rounds != 1 {
		t.Fatalf("%d PUTs in %d rounds, want the ledger and 4 blocks in 1", st.Put.Requests, st.Rounds)
	}
}

// TestStageFailedBlockKeepsLedger: a block that fails does not cancel the
// ledger, so whatever was uploaded is named when Stage returns.
func TestStageFailedBlockKeepsLedger(t *testing.T) {
	b := mem.NewBucket()
	fb := fault.New(b)
	layout := newLayout(t)
	s := bodies.New(fb, layout, bodies.Options{BlockSize: 2, Retry: fastRetry})
	body := []byte("aabbccdd")
	st := staging(s, body)
	fb.Inject(fault.Rule{Op: fault.OpPut, Key: st.Blocks[0].Key, Fault: fault.FailBefore(errors.New("boom"))})
	if _, err := s.Stage(t.Context(), st, body); err == nil {
		t.Fatal("stage succeeded")
	}
	if _, _, err := b.Get(t.Context(), bodies.StagingKey(layout, op)); err != nil {
		t.Fatalf("ledger: %v", err)
	}
}

// TestInlineAndPrefetchedBlocks: a block that holds its bytes is checked
// and streamed without a request; a prefetched object is used only for
// the block that names it, and checked like any other.
func TestInlineAndPrefetchedBlocks(t *testing.T) {
	ctx := t.Context()
	b := mem.NewBucket()
	cb := counting.New(b)
	s := bodies.New(cb, newLayout(t), bodies.Options{BlockSize: 4})
	body := []byte("0123456789")
	st := staging(s, body)
	if _, err := s.Stage(ctx, st, body); err != nil {
		t.Fatal(err)
	}
	inline := bodies.Block{Size: 3, Digest: digest.Sum([]byte("xyz")), Data: []byte("xyz")}
	cb.Reset()
	got, err := collect(ctx, s, []bodies.Block{inline})
	if err != nil || string(got) != "xyz" || cb.Snapshot().Total().Requests != 0 {
		t.Fatalf("inline: %q %v, %+v", got, err, cb.Snapshot())
	}
	bad := inline
	bad.Data = []byte("xyZ")
	if _, err := collect(ctx, s, []bodies.Block{bad}); !errors.Is(err, bucket.ErrIntegrity) {
		t.Fatalf("tampered inline block: %v, want ErrIntegrity", err)
	}

	cb.Reset()
	f := s.Prefetch(ctx, s.BlockKey(root, rev, 0))
	blocks := slices.Clone(st.Blocks)
	blocks[0] = f.Use(blocks[0])
	blocks[1] = f.Use(blocks[1]) // names another object: no effect
	if got, err := collect(ctx, s, blocks); err != nil || !bytes.Equal(got, body) {
		t.Fatalf("stream %q, %v", got, err)
	}
	// The prefetch was the only read of block 0.
	if got := cb.Snapshot().Get.Requests; got != 3 {
		t.Fatalf("%d GETs with the prefetch, want 3", got)
	}
	// A prefetch of another object is checked against the block's digest.
	wrong := s.Prefetch(ctx, st.Blocks[1].Key)
	w := st.Blocks[0]
	w.Key = st.Blocks[1].Key
	if _, err := collect(ctx, s, []bodies.Block{wrong.Use(w)}); !errors.Is(err, bucket.ErrIntegrity) {
		t.Fatalf("mismatched prefetch: %v, want ErrIntegrity", err)
	}
}

// TestBlockCache: a small block read once is read again from the cache,
// only by a caller that expects the digest it was checked against; a
// block that failed its check, a block over CacheMaxBlock and a slice of
// an object are never cached; a Prefetch of a cached block's key sends
// nothing; CacheBytes < 0 turns the cache off.
func TestBlockCache(t *testing.T) {
	ctx := t.Context()
	for _, on := range []bool{true, false} {
		mb := mem.NewBucket()
		cb := counting.New(mb)
		opts := bodies.Options{BlockSize: 4}
		if !on {
			opts.CacheBytes = -1
		}
		s := bodies.New(cb, newLayout(t), opts)
		body := []byte("aaaabbbbcccc")
		st := staging(s, body)
		if _, err := s.Stage(ctx, st, body); err != nil {
			t.Fatal(err)
		}
		read := func(what string, blocks []bodies.Block, gets int64) {
			t.Helper()
			cb.Reset()
			if _, err := collect(ctx, s, blocks); err != nil {
				t.Fatalf("%s: %v", what, err)
			}
			if !on {
				gets = int64(len(blocks))
			}
			if got := cb.Snapshot().Get.Requests; got != gets {
				t.Errorf("cache %v, %s: %d GETs, want %d", on, what, got, gets)
			}
		}
		read("first read", st.Blocks, 3)
		read("second read", st.Blocks, 0)
		// Another digest expected under the same key: read, and checked.
		other := st.Blocks[0]
		other.Digest = digest.Sum([]byte("zzzz"))
		cb.Reset()
		if _, err := collect(ctx, s, []bodies.Block{other}); !errors.Is(err, bucket.ErrIntegrity) || cb.Snapshot().Get.Requests != 1 {
			t.Errorf("cache %v, other digest: %v after %d GETs", on, err, cb.Snapshot().Get.Requests)
		}
		read("after the mismatch", st.Blocks[:1], 0)
		// A slice of an object is not cached.
		part := []bodies.Block{{Key: st.Blocks[1].Key, Offset: 1, Size: 2, Digest: digest.Sum([]byte("bb"))}}
		read("a slice", part, 1)
		read("a slice again", part, 1)
		// Prefetch of a cached block's key sends nothing.
		pctx, cancel := context.WithCancel(ctx)
		if f := s.Prefetch(pctx, st.Blocks[2].Key); (f == nil) != on {
			t.Errorf("cache %v: prefetch of a block read before: fetch %v", on, f)
		}
		cancel()
	}
	// A block over CacheMaxBlock is read every time.
	cb := counting.New(mem.NewBucket())
	s := bodies.New(cb, newLayout(t), bodies.Options{BlockSize: bodies.CacheMaxBlock + 1})
	body := bytes.Repeat([]byte("x"), bodies.CacheMaxBlock+1)
	st := staging(s, body)
	if _, err := s.Stage(ctx, st, body); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if _, err := collect(ctx, s, st.Blocks); err != nil {
			t.Fatal(err)
		}
	}
	if got := s.CacheStats().Entries; got != 0 {
		t.Fatalf("%d blocks cached, want none over %d bytes", got, bodies.CacheMaxBlock)
	}
}

// FuzzDecodeStagingLedger: no bytes panic the ledger decoder; an error is
// one of the manifests package's sentinels; a ledger that decodes
// re-encodes to exactly its bytes.
func FuzzDecodeStagingLedger(f *testing.F) {
	st := bodies.Staging{
		Operation: [16]byte{1},
		Origin:    bodies.Origin{Tool: "workbench_put_file", WorkbenchID: "wb", Path: "outputs/x"},
	}
	for _, blocks := range [][]bodies.Block{nil, {
		{Index: 0, Key: "artifacts/k/0", Size: 2, Digest: digest.Sum([]byte("ab"))},
		{Index: 1, Key: "artifacts/k/1", Size: 1 << 40, Digest: digest.Sum([]byte("c"))},
	}} {
		st.Blocks = blocks
		b, err := manifests.Encode(st.Ledger())
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte(`{"schema":"cairn.staging_ledger.v0"}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		l, err := bodies.DecodeStagingLedger(b)
		if err != nil {
			for _, want := range []error{manifests.ErrInvalid, manifests.ErrNotCanonical, manifests.ErrUnknownField, manifests.ErrSchema} {
				if errors.Is(err, want) {
					return
				}
			}
			t.Fatalf("error %v is none of the manifests sentinels", err)
		}
		again, err := manifests.Encode(l)
		if err != nil || !bytes.Equal(again, b) {
			t.Fatalf("ledger %s re-encodes as %s, %v", b, again, err)
		}
	})
}

// TestSharedBlockCache: Stores of two shards given one BlockCache fill it
// both, each finds its own blocks there, and neither reads the other's.
func TestSharedBlockCache(t *testing.T) {
	ctx := t.Context()
	b := mem.NewBucket()
	cache := bodies.NewBlockCache(1 << 20)
	var stores []*bodies.Store
	var blocks [][]bodies.Block
	for i := range 2 {
		layout := shards.NewLayout(shardstest.Schema(), shards.ShardID{byte(i + 1)})
		s := bodies.New(b, layout, bodies.Options{BlockSize: 8, Cache: cache})
		body := []byte(fmt.Sprintf("shard %d's body", i))
		st := staging(s, body)
		st.Blocks = s.Plan(root, st.Revision, body)
		if _, err := s.Stage(ctx, st, body); err != nil {
			t.Fatal(err)
		}
		for range 2 {
			got, err := collect(ctx, s, st.Blocks)
			if err != nil || string(got) != string(body) {
				t.Fatalf("shard %d: %q, %v", i, got, err)
			}
		}
		stores, blocks = append(stores, s), append(blocks, st.Blocks)
	}
	st := cache.Stats()
	n := int64(len(blocks[0]) + len(blocks[1]))
	if st.Entries != int(n) || st.Misses != n || st.Hits != n {
		t.Fatalf("shared cache: %+v, want %d entries, %d misses, %d hits", st, n, n, n)
	}
	if st != stores[0].CacheStats() || st != stores[1].CacheStats() {
		t.Errorf("each Store reports the shared cache: %+v, %+v", stores[0].CacheStats(), stores[1].CacheStats())
	}
}
