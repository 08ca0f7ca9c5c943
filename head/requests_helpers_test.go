package head_test

// Helpers of the request-count tests (requests_test.go).

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cairnstore/cairn/bucket"
	"github.com/cairnstore/cairn/bucket/counting"
	"github.com/cairnstore/cairn/bucket/latency"
	"github.com/cairnstore/cairn/bucket/mem"
	"github.com/cairnstore/cairn/head"
	"github.com/cairnstore/cairn/roots"
	"github.com/cairnstore/cairn/shards"
	"github.com/cairnstore/cairn/shards/shardstest"
)

// rqFamilies are families whose keys are any 32 bytes, so that tests can
// fill them with generated keys.
var rqFamilies = []shards.Family{shardstest.Fixed32, shardstest.Fixed32B, shardstest.Fixed32C}

// rqKey returns the i-th generated 32-byte key of family f.
func rqKey(f shards.Family, i int) []byte {
	k := make([]byte, 32)
	k[0] = byte(f)
	binary.BigEndian.PutUint64(k[24:], uint64(i))
	return k
}

func rqShardOf(t testing.TB, f shards.Family, k []byte) uint8 {
	t.Helper()
	idx, err := head.SchemaForTest.Families.ShardOf(f, k)
	if err != nil {
		t.Fatal(err)
	}
	return idx
}

// rqKind classifies a key of the engine's layout: head, root, table,
// shard, or other.
func rqKind(key string) string {
	if strings.HasPrefix(key, "shards/") && strings.HasSuffix(key, "/head") && strings.Count(key, "/") == 2 {
		return "head"
	}
	k, err := shards.ParseObjectKey(head.SchemaForTest.Families, key)
	if err != nil {
		return "other"
	}
	return k.Kind.String()
}

// rqCall is one call a rqRecorder saw.
type rqCall struct {
	Op    string // get, stat, put, delete, list
	Key   string
	Kind  string // see rqKind
	Cond  bool   // a conditional put or delete
	Bytes int    // body bytes read (successful get) or sent (put)
	Err   error
}

func (c rqCall) String() string {
	cond := ""
	if c.Cond {
		cond = " (conditional)"
	}
	return fmt.Sprintf("%s %s %s%s", c.Op, c.Kind, c.Key, cond)
}

// rqRecorder logs every call to its inner bucket. If gate is set,
// unconditional puts wait at it (see rqGate); if getGate is set, so do
// GETs of tables and delta segments.
type rqRecorder struct {
	bucket.Bucket
	mu      sync.Mutex
	calls   []rqCall
	gate    *rqGate
	getGate *rqGate
}

func (r *rqRecorder) log(c rqCall) {
	c.Kind = rqKind(c.Key)
	r.mu.Lock()
	r.calls = append(r.calls, c)
	r.mu.Unlock()
}

// take returns the calls logged since the last take and forgets them.
func (r *rqRecorder) take() []rqCall {
	r.mu.Lock()
	defer r.mu.Unlock()
	c := r.calls
	r.calls = nil
	return c
}

func (r *rqRecorder) setGate(g *rqGate) {
	r.mu.Lock()
	r.gate = g
	r.mu.Unlock()
}

func (r *rqRecorder) Get(ctx context.Context, key string) ([]byte, bucket.Attrs, error) {
	r.mu.Lock()
	g := r.getGate
	r.mu.Unlock()
	if k := rqKind(key); g != nil && (k == "table" || k == "delta") {
		g.wait()
	}
	b, a, err := r.Bucket.Get(ctx, key)
	r.log(rqCall{Op: "get", Key: key, Bytes: len(b), Err: err})
	return b, a, err
}

func (r *rqRecorder) Stat(ctx context.Context, key string) (bucket.Attrs, error) {
	a, err := r.Bucket.Stat(ctx, key)
	r.log(rqCall{Op: "stat", Key: key, Err: err})
	return a, err
}

func (r *rqRecorder) Put(ctx context.Context, key string, body []byte, cond bucket.Condition) (bucket.Attrs, error) {
	r.mu.Lock()
	g := r.gate
	r.mu.Unlock()
	if g != nil && cond.IsUnconditional() {
		g.wait()
	}
	a, err := r.Bucket.Put(ctx, key, body, cond)
	r.log(rqCall{Op: "put", Key: key, Cond: !cond.IsUnconditional(), Bytes: len(body), Err: err})
	return a, err
}

func (r *rqRecorder) Delete(ctx context.Context, key string, cond bucket.Condition) error {
	err := r.Bucket.Delete(ctx, key, cond)
	r.log(rqCall{Op: "delete", Key: key, Cond: !cond.IsUnconditional(), Err: err})
	return err
}

func (r *rqRecorder) List(ctx context.Context, opts bucket.ListOptions) (bucket.ListPage, error) {
	p, err := r.Bucket.List(ctx, opts)
	r.log(rqCall{Op: "list", Key: opts.Prefix, Err: err})
	return p, err
}

// rqGate holds unconditional puts until n of them wait at once, so that
// writes a commit sends together provably overlap (and count as one
// round), while writes sent one after another would never fill the gate:
// after a generous timeout they pass and the gate reports it.
type rqGate struct {
	n        int
	mu       sync.Mutex
	arrived  int
	open     chan struct{}
	timedOut bool
}

func newRQGate(n int) *rqGate { return &rqGate{n: n, open: make(chan struct{})} }

func (g *rqGate) wait() {
	g.mu.Lock()
	g.arrived++
	if g.arrived == g.n {
		close(g.open)
	}
	g.mu.Unlock()
	select {
	case <-g.open:
	case <-time.After(10 * time.Second):
		g.mu.Lock()
		g.timedOut = true
		g.mu.Unlock()
	}
}

func (g *rqGate) result() (arrived int, timedOut bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.arrived, g.timedOut
}

// rqReplica is one Store over a shared mem store, with its own counting
// wrapper and recorder: a replica in its own process.
type rqReplica struct {
	s   *head.Store
	cb  *counting.Bucket
	rec *rqRecorder
}

func (r *rqReplica) reset() {
	r.cb.Reset()
	r.rec.take()
}

// newRQReplica opens a Store of shard id over store. Check stays off: it
// reads the whole graph after every commit and would swamp the counts.
func newRQReplica(t testing.TB, store *mem.Store, id shards.ShardID, opts head.Options) *rqReplica {
	t.Helper()
	mb, err := mem.New(store, "")
	if err != nil {
		t.Fatal(err)
	}
	rec := &rqRecorder{Bucket: mb}
	cb := counting.New(rec)
	s, err := head.Open(context.Background(), cb, id, head.SchemaForTest, opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Initialize(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return &rqReplica{s: s, cb: cb, rec: rec}
}

// newRQCold opens a replica in a new process: nothing read yet, every
// request from Open on counted. Each request takes a little while, so
// that requests sent together overlap and count as one round.
func newRQCold(t testing.TB, store *mem.Store, id shards.ShardID) *rqReplica {
	t.Helper()
	mb, err := mem.New(store, "")
	if err != nil {
		t.Fatal(err)
	}
	rec := &rqRecorder{Bucket: latency.New(mb, latency.Options{PerRequest: 3 * time.Millisecond})}
	cb := counting.New(rec)
	s, err := head.Open(context.Background(), cb, id, head.SchemaForTest, head.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return &rqReplica{s: s, cb: cb, rec: rec}
}

// rqFill commits n records into each of the families, one commit per
// family, and returns the sequence of the last commit. It commits through
// a Store of its own over s's bucket that folds every commit inline, so
// the records land in the base shards (and with them every delta before):
// the tests that fill measure reads and commits over a filled base.
func rqFill(t testing.TB, s *head.Store, fams []shards.Family, n int) uint64 {
	t.Helper()
	return rqFillWith(t, s, fams, n, head.Options{})
}

// rqFillWith is rqFill through a Store of opts (MaxDeltaBytes set to 1).
func rqFillWith(t testing.TB, s *head.Store, fams []shards.Family, n int, opts head.Options) uint64 {
	t.Helper()
	opts.MaxDeltaBytes = 1
	filler, err := head.Open(context.Background(), s.Bucket(), s.ID(), head.SchemaForTest, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer filler.Close()
	var seq uint64
	for _, f := range fams {
		r, err := filler.Do(context.Background(), head.Command{Apply: func(tx *head.Tx) ([]byte, error) {
			for i := range n {
				if err := tx.Put(f, rqKey(f, i), rqValue(f, i, 0)); err != nil {
					return nil, err
				}
			}
			return nil, nil
		}})
		if err != nil {
			t.Fatal(err)
		}
		seq = r.Sequence
	}
	return seq
}

// rqValue is the 8-byte value of record i of f at generation g.
func rqValue(f shards.Family, i, g int) []byte {
	return binary.BigEndian.AppendUint64(nil, uint64(f)<<56|uint64(g)<<32|uint64(i))
}

func rqPut(f shards.Family, i, g int) head.Command {
	return head.Command{Apply: func(tx *head.Tx) ([]byte, error) {
		return nil, tx.Put(f, rqKey(f, i), rqValue(f, i, g))
	}}
}

// rqPin pins and fails the test on error.
func rqPin(t testing.TB, s *head.Store) *head.Snapshot {
	t.Helper()
	sn, err := s.Pin(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return sn
}

// rqMustGet reads f/key through sn and checks its value.
func rqMustGet(t testing.TB, sn *head.Snapshot, f shards.Family, i int, want []byte) {
	t.Helper()
	v, ok, err := sn.Get(context.Background(), f, rqKey(f, i))
	if err != nil {
		t.Fatal(err)
	}
	if !ok || !bytes.Equal(v, want) {
		t.Fatalf("%s record %d = %x, %v; want %x", f, i, v, ok, want)
	}
}

// rqKinds counts calls by "op kind".
func rqKinds(calls []rqCall) map[string]int {
	m := map[string]int{}
	for _, c := range calls {
		m[c.Op+" "+c.Kind]++
	}
	return m
}

func rqKeys(calls []rqCall) []string {
	var ks []string
	for _, c := range calls {
		ks = append(ks, c.Op+" "+c.Key)
	}
	sort.Strings(ks)
	return ks
}

// rqExpectTable reads and decodes, straight from the bucket, the table the
// snapshot's root names for f.
func rqExpectTable(t testing.TB, b bucket.Bucket, sn *head.Snapshot, layout shards.Layout, f shards.Family) *roots.Table {
	t.Helper()
	fr, ok := sn.Root().Family(f)
	if !ok {
		t.Fatalf("root has no %s", f)
	}
	body, _, err := b.Get(context.Background(), layout.Table(fr.Table.Hash))
	if err != nil {
		t.Fatal(err)
	}
	tab, err := roots.DecodeTable(head.SchemaForTest.Families, body, fr.Table.Hash)
	if err != nil {
		t.Fatal(err)
	}
	return tab
}

func rqShardKey(t testing.TB, tab *roots.Table, layout shards.Layout, f shards.Family, idx uint8) string {
	t.Helper()
	ref, ok := tab.Lookup(idx)
	if !ok {
		t.Fatalf("%s table has no shard %02x", f, idx)
	}
	return layout.Shard(f, idx, ref.Hash)
}
