package bench

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cairnstore/cairn/bucket"
	"github.com/cairnstore/cairn/bucket/counting"
	"github.com/cairnstore/cairn/bucket/latency"
	"github.com/cairnstore/cairn/bucket/mem"
	"github.com/cairnstore/cairn/workbench"
)

// stack is the store of one size: memory, a recorder that remembers which
// object is replaced conditionally (the head), and a latency wrapper that
// a switch can bypass while seeding.
type stack struct {
	store *mem.Store
	raw   *mem.Bucket
	rec   *recorder
	lat   *latency.Bucket
	sw    *toggle
}

func newStack(cfg Config) (*stack, error) {
	st := mem.NewStore()
	raw, err := mem.New(st, "")
	if err != nil {
		return nil, err
	}
	rec := &recorder{Bucket: raw}
	lat := latency.New(rec, latency.Options{
		PerRequest:               cfg.RTT,
		WritesPerSecondPerObject: cfg.WriteRate,
	})
	return &stack{store: st, raw: raw, rec: rec, lat: lat, sw: &toggle{fast: rec, slow: lat}}, nil
}

// replica is one Service with its own counting wrapper.
type replica struct {
	svc *workbench.Service
	cnt *counting.Bucket
}

// open opens a Service over the stack, counting from before its Open.
func (s *stack) open(ctx context.Context, engine workbench.Options) (*replica, counting.Stats, error) {
	cnt := counting.New(s.sw)
	svc, err := workbench.Open(ctx, cnt, engine)
	if err != nil {
		return nil, counting.Stats{}, err
	}
	return &replica{svc: svc, cnt: cnt}, cnt.Snapshot(), nil
}

func (r *replica) Close() error { return r.svc.Close() }

// headBytes is the size of the head as stored now, 0 before the first
// conditional replace.
func (s *stack) headBytes(ctx context.Context) int64 {
	key := s.rec.headKey()
	if key == "" {
		return 0
	}
	a, err := s.raw.Stat(ctx, key)
	if err != nil {
		return 0
	}
	return a.Size
}

// recorder remembers the key of the last Put conditional on a version:
// the one object the engine replaces in place, the head. Finding it this
// way keeps the bench independent of the key layout.
type recorder struct {
	bucket.Bucket
	mu   sync.Mutex
	head string
}

func (r *recorder) Put(ctx context.Context, key string, body []byte, cond bucket.Condition) (bucket.Attrs, error) {
	a, err := r.Bucket.Put(ctx, key, body, cond)
	if _, ok := cond.Version(); ok && err == nil {
		r.mu.Lock()
		r.head = key
		r.mu.Unlock()
	}
	return a, err
}

func (r *recorder) headKey() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.head
}

// toggle forwards to slow (the latency wrapper) unless bypassed.
type toggle struct {
	fast, slow bucket.Bucket
	bypass     atomic.Bool
}

var _ bucket.Bucket = (*toggle)(nil)

func (t *toggle) pick() bucket.Bucket {
	if t.bypass.Load() {
		return t.fast
	}
	return t.slow
}

func (t *toggle) Get(ctx context.Context, key string) ([]byte, bucket.Attrs, error) {
	return t.pick().Get(ctx, key)
}

func (t *toggle) Stat(ctx context.Context, key string) (bucket.Attrs, error) {
	return t.pick().Stat(ctx, key)
}

func (t *toggle) Put(ctx context.Context, key string, body []byte, cond bucket.Condition) (bucket.Attrs, error) {
	return t.pick().Put(ctx, key, body, cond)
}

func (t *toggle) Delete(ctx context.Context, key string, cond bucket.Condition) error {
	return t.pick().Delete(ctx, key, cond)
}

func (t *toggle) List(ctx context.Context, opts bucket.ListOptions) (bucket.ListPage, error) {
	return t.pick().List(ctx, opts)
}

func (t *toggle) Capabilities() bucket.Capabilities { return t.slow.Capabilities() }

// Close does nothing: the stack owns the memory store.
func (t *toggle) Close() error { return nil }

// pace waits out the write limit's window, so a measured call never meets
// a throttle left by the call before it.
func pace(ctx context.Context, cfg Config) error {
	if cfg.WriteRate <= 0 {
		return nil
	}
	return bucket.Sleep(ctx, time.Duration(float64(time.Second)/cfg.WriteRate)+50*time.Millisecond)
}
