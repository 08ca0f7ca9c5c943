package storesuite

// One scenario's run: the suite's schema, the replicas over the shared
// bucket, and their setup, crashes and teardown.

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/cairnstore/cairn/bucket"
	"github.com/cairnstore/cairn/bucket/fault"
	"github.com/cairnstore/cairn/head"
	"github.com/cairnstore/cairn/shards"
)

// storeFamily is the family the suite's keys live in: 32-byte keys, each
// its own shard key.
const storeFamily shards.Family = 0x04

// storeSchema is the suite's own schema: storeFamily and the engine's.
var storeSchema = sync.OnceValue(func() head.Schema {
	fams, err := shards.NewSchema(shards.FamilySpec{Family: storeFamily, Name: "appends",
		ShardKey: func(key []byte) ([]byte, error) {
			if len(key) != 32 {
				return nil, &shards.KeyError{Op: "appends key", Reason: fmt.Sprintf("%d bytes, want 32", len(key))}
			}
			return key, nil
		}})
	if err != nil {
		panic(err)
	}
	return head.Schema{Marker: head.Marker{SchemaID: "cairn_conformance_store", FormatVersion: 1, ValueFormatVersion: 1}, Families: fams}
})

// storeRun is one scenario's run.
type storeRun struct {
	opts     Options
	sc       storeScenario
	shared   bucket.Bucket
	id       shards.ShardID
	layout   shards.Layout
	start    time.Time
	ctx      context.Context
	keyRoot  [16]byte
	keys     [][]byte
	replicas []*storeReplica
	// The conditional head writes the bucket accepted and refused, and
	// the fence that stops the replicas' writes once the clients are done.
	landed, conflicts atomic.Int64
	fenced            atomic.Bool
	fenceInflight     sync.RWMutex // see storeFence
	initial           uint64       // the head sequence before the clients start
	landed0           int64        // landed conditional head puts before the clients start
	nextID            atomic.Uint64
	late              sync.WaitGroup // late-landing writes in flight

	mu      sync.Mutex
	history []porcupine.Operation
	acked   map[string]int // acknowledged id → key
	issued  map[string]int // every appended id → key, but those in failed
	failed  map[string]int // appends known to have failed → key
	errs    map[string]int
	final   [][]string // each key's final list
	rep     *Report
}

// storeReplica is one process serving the shard: a store over its own
// fault injector, replaced by a new store (and injector) when it crashes.
type storeReplica struct {
	idx   int
	run   *storeRun
	head  string // the head's key
	seed  uint64
	own   bucket.Bucket // the replica's own client, from Options.Replica
	cas   *storeCASCounter
	fence *storeFence

	mu      sync.Mutex
	gen     int           // the current generation (process) of the replica
	fb      *fault.Bucket // the current generation's injector
	late    *storeLateWrites
	fbs     []*fault.Bucket
	st      *head.Store // nil after a crash, until the next request
	ctx     context.Context
	cancel  context.CancelFunc
	crashes int
	handles []storeHandle
	lates   []*storeLateWrites
}

// arm gives the replica's current generation a new injector with the
// scenario's faults. The caller holds rep.mu (or has the replica to itself).
func (rep *storeReplica) arm(faults bool) {
	rep.late = &storeLateWrites{Bucket: rep.fence, direct: rep.cas, head: rep.head, p: rep.run.sc.late, wg: &rep.run.late,
		rng: rand.New(rand.NewPCG(rep.seed, uint64(rep.gen)))}
	rep.lates = append(rep.lates, rep.late)
	rep.fb = fault.New(rep.late)
	rep.fbs = append(rep.fbs, rep.fb)
	rep.fb.Seed(rep.seed ^ uint64(rep.gen)*0xbf58476d1ce4e5b9)
	if faults {
		rep.armRules()
	}
}

func (rep *storeReplica) armRules() {
	rep.late.enable(true)
	for _, sr := range rep.run.sc.rules(rep) {
		rep.handles = append(rep.handles, storeHandle{sr.kind, rep.fb.Inject(sr.rule)})
	}
}

type storeHandle struct {
	kind string
	h    *fault.Handle
}

func (r *storeRun) now() int64 { return time.Since(r.start).Nanoseconds() }

// setup opens the replicas concurrently (the first commit initializes the
// shard), then arms the scenario's faults.
func (r *storeRun) setup(seed uint64) error {
	for i := range r.opts.Replicas {
		rep := &storeReplica{idx: i, run: r, head: r.layout.Head(), seed: seed ^ uint64(i+1)*0x9e3779b97f4a7c15}
		base := r.shared
		if r.opts.Replica != nil {
			b, err := r.opts.Replica(r.shared, i)
			if err != nil {
				return fmt.Errorf("conformance: replica %d's bucket: %w", i, err)
			}
			rep.own = b
			base = b
		}
		rep.cas = &storeCASCounter{Bucket: base, head: rep.head, landed: &r.landed, conflicts: &r.conflicts}
		rep.fence = &storeFence{Bucket: rep.cas, closed: &r.fenced, inflight: &r.fenceInflight}
		rep.ctx, rep.cancel = context.WithCancel(r.ctx)
		rep.arm(false)
		r.replicas = append(r.replicas, rep)
	}
	errs := make([]error, len(r.replicas))
	var wg sync.WaitGroup
	for i, rep := range r.replicas {
		wg.Go(func() {
			st, err := head.Open(r.ctx, rep.fb, r.id, storeSchema(), r.opts.Head)
			if err != nil {
				errs[i] = fmt.Errorf("conformance: open replica %d: %w", i, err)
				return
			}
			r.handleAppend(st)
			rep.st = st
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	// Open does no I/O; the shard is created here, before any fault is
	// armed, as a first commit would create it.
	if err := r.replicas[0].st.Initialize(r.ctx); err != nil {
		return fmt.Errorf("conformance: initialize the new shard: %w", err)
	}
	sn, err := r.replicas[0].st.Pin(r.ctx)
	if err != nil {
		return fmt.Errorf("conformance: pin the new shard: %w", err)
	}
	r.initial = sn.Sequence()
	r.landed0 = r.landed.Load()
	for _, rep := range r.replicas {
		rep.armRules()
	}
	return nil
}

// current returns the replica's live store and the context its requests
// run under, opening a new store after a crash.
func (rep *storeReplica) current() (*head.Store, context.Context, error) {
	rep.mu.Lock()
	defer rep.mu.Unlock()
	if rep.st == nil {
		// Open does no I/O: no conditional put, and no crash fault, can
		// fire under rep.mu.
		st, err := head.Open(rep.ctx, rep.fb, rep.run.id, storeSchema(), rep.run.opts.Head)
		if err != nil {
			return nil, nil, fmt.Errorf("%w: %w", errStoreReopen, err)
		}
		rep.run.handleAppend(st)
		rep.st = st
	}
	return rep.st, rep.ctx, nil
}

// crash kills generation gen of the replica, if it is still alive: its
// in-flight requests are cancelled and its store (with its cache) is
// dropped. It runs inside a fault hook.
func (rep *storeReplica) crash(gen int) {
	rep.mu.Lock()
	if rep.gen != gen {
		rep.mu.Unlock()
		return
	}
	rep.cancel()
	old := rep.st
	rep.st = nil
	rep.gen++
	rep.ctx, rep.cancel = context.WithCancel(rep.run.ctx)
	rep.arm(true)
	rep.crashes++
	rep.mu.Unlock()
	if old != nil {
		old.CloseNow() // a crash waits for nothing; this runs inside one of the store's requests
	}
}

func (r *storeRun) close() {
	for _, rep := range r.replicas {
		rep.mu.Lock()
		if rep.st != nil {
			rep.st.Close()
		}
		rep.cancel()
		rep.mu.Unlock()
		if rep.own != nil {
			rep.own.Close()
		}
	}
}
