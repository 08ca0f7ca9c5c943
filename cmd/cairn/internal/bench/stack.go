package bench

import (
	"context"
	"fmt"
	"io"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cairnstore/cairn/bucket"
	"github.com/cairnstore/cairn/bucket/counting"
	"github.com/cairnstore/cairn/bucket/file"
	"github.com/cairnstore/cairn/bucket/latency"
	"github.com/cairnstore/cairn/bucket/mem"
	"github.com/cairnstore/cairn/workbench"
)

// stack is the store of one size: memory, or a local-file bucket in a
// directory of its own; a recorder that remembers which object is
// replaced conditionally (the head); and a latency wrapper that a switch
// can bypass while seeding.
type stack struct {
	cacheBytes  int64 // of every replica's engine, 0 for the default
	valueFormat int   // workbench.Options.ValueFormat of every replica
	raw         bucket.Bucket
	file        *file.Bucket // raw, when it is a local-file bucket
	dir         string       // its directory, removed by close
	rec         *recorder
	lat         *latency.Bucket
	sw          *toggle
}

// newStack makes the stack of one size over raw, or, when raw is nil,
// over a new store in memory or in a directory under cfg.Dir.
func newStack(cfg Config, raw bucket.Bucket) (*stack, error) {
	s := &stack{cacheBytes: cfg.CacheBytes, valueFormat: cfg.ValueFormat}
	switch {
	case raw != nil:
		s.raw = raw
	case cfg.Dir == "":
		raw, err := mem.New(mem.NewStore(), "")
		if err != nil {
			return nil, err
		}
		s.raw = raw
	default:
		dir, err := os.MkdirTemp(cfg.Dir, "cairn-bench-")
		if err != nil {
			return nil, fmt.Errorf("bench: %w", err)
		}
		fb, err := file.New(dir)
		if err != nil {
			os.RemoveAll(dir)
			return nil, err
		}
		s.raw, s.file, s.dir = fb, fb, dir
	}
	rec := &recorder{Bucket: s.raw}
	lat := latency.New(rec, latency.Options{
		PerRequest:               cfg.RTT,
		WritesPerSecondPerObject: cfg.WriteRate,
	})
	s.rec, s.lat, s.sw = rec, lat, &toggle{fast: rec, slow: traced(lat, cfg.Trace)}
	return s, nil
}

// close closes the bucket. A local-file bucket's directory stays, for
// Run to remove once every size is measured: on an ext4 file system
// without a journal, a file made within seconds of many deletions costs
// a scan past every inode they freed, so removing one size's store
// before the next size's seeding slowed that size's puts (a put-new-warm
// p50 of 3.2 ms at 1,000 files after a store of 100,000 was removed,
// against 1.2 ms; docs/performance.md, "Fewer system calls a put").
func (s *stack) close() error {
	return s.raw.Close()
}

// syncs returns the fsyncs of a local-file bucket so far (files,
// directories and whole file systems), 0 in memory.
func (s *stack) syncs() int64 {
	if s.file == nil {
		return 0
	}
	f, d := s.file.Syncs()
	return f + d + s.file.FileSystemSyncs()
}

// replica is one Service with its own counting wrapper.
type replica struct {
	svc *workbench.Service
	cnt *counting.Bucket
}

// open opens a Service over the stack, counting from before its Open.
func (s *stack) open(ctx context.Context, engine workbench.Options) (*replica, counting.Stats, error) {
	engine.Engine.CacheBytes = s.cacheBytes
	engine.ValueFormat = s.valueFormat
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

// traced returns b, writing a line to w for every Get, Put, Delete and
// List when w is not nil: its start, duration, size and key.
func traced(b bucket.Bucket, w io.Writer) bucket.Bucket {
	if w == nil {
		return b
	}
	return &tracer{Bucket: b, w: w, start: time.Now()}
}

type tracer struct {
	bucket.Bucket
	w     io.Writer
	start time.Time
	mu    sync.Mutex
}

func (t *tracer) log(op, key string, n int, began time.Time, err error) {
	status := ""
	if err != nil {
		status = " " + err.Error()
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	fmt.Fprintf(t.w, "trace %9.1fms %6.1fms %-6s %8d %s%s\n",
		float64(began.Sub(t.start).Microseconds())/1000, float64(time.Since(began).Microseconds())/1000, op, n, key, status)
}

func (t *tracer) Get(ctx context.Context, key string) ([]byte, bucket.Attrs, error) {
	began := time.Now()
	b, a, err := t.Bucket.Get(ctx, key)
	t.log("GET", key, len(b), began, err)
	return b, a, err
}

func (t *tracer) Put(ctx context.Context, key string, body []byte, cond bucket.Condition) (bucket.Attrs, error) {
	began := time.Now()
	a, err := t.Bucket.Put(ctx, key, body, cond)
	t.log("PUT", key, len(body), began, err)
	return a, err
}

func (t *tracer) Delete(ctx context.Context, key string, cond bucket.Condition) error {
	began := time.Now()
	err := t.Bucket.Delete(ctx, key, cond)
	t.log("DELETE", key, 0, began, err)
	return err
}

func (t *tracer) List(ctx context.Context, opts bucket.ListOptions) (bucket.ListPage, error) {
	began := time.Now()
	p, err := t.Bucket.List(ctx, opts)
	t.log("LIST", opts.Prefix, len(p.Objects), began, err)
	return p, err
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

// Close does nothing: the stack owns the bucket.
func (t *toggle) Close() error { return nil }

// pace waits out the write limit's window, so a measured call never meets
// a throttle left by the call before it.
func pace(ctx context.Context, cfg Config) error {
	if cfg.WriteRate <= 0 {
		return nil
	}
	return bucket.Sleep(ctx, time.Duration(float64(time.Second)/cfg.WriteRate)+50*time.Millisecond)
}
