package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"log/slog"
	mrand "math/rand/v2"
	"sync/atomic"
	"time"

	"github.com/cairnstore/cairn/bucket"
	"github.com/cairnstore/cairn/cmd/cairn/internal/serve"
	"github.com/cairnstore/cairn/gcsweep"
	"github.com/cairnstore/cairn/workbench"
)

// sweepLeaseKey is the object through which the replicas of one bucket
// choose the one that sweeps it.
const sweepLeaseKey = "sweeper/lease"

// minSweepInterval and maxSweepInterval bound --gc-interval (0 turns the
// sweeper off).
const (
	minSweepInterval = time.Second
	maxSweepInterval = 366 * 24 * time.Hour
)

// A sweeper collects the garbage of a bucket in the background of
// `cairn serve`: every interval (with a tenth of jitter), the replica
// that holds the bucket's sweep lease sweeps every Workbench shard as
// `cairn gc --all-agents` does, and removes the temporary files of dead
// writes on a local-file bucket. The sweep is safe beside writers and
// beside another sweep (the horizon rule, docs/operations.md), so the
// lease is for cost, not for safety: a replica that was paused past its
// turn and sweeps beside the new holder only does the same work twice.
//
// The lease is an object, written create-only at first and then only
// conditionally on the version read. Its holder renews it at each turn.
// Another replica takes it over when it has seen the same version for two
// of the holder's intervals (or two of its own, if longer) by its own
// clock: a clock that stops while its process is paused only makes it
// wait longer.
type sweeper struct {
	b        bucket.Bucket
	log      *slog.Logger
	interval time.Duration
	id       string

	// seen is the lease as this replica last saw it held by another,
	// and when it first saw that version.
	seen      bucket.Version
	seenSince time.Time

	// For /metrics (samples).
	holding                      atomic.Bool
	sweeps, failures             atomic.Int64
	deletedObjects, deletedBytes atomic.Int64
	lastSweep                    atomic.Int64 // Unix seconds
}

// sweepLease is the lease object's body.
type sweepLease struct {
	Holder   string `json:"holder"`
	Interval string `json:"interval"` // the holder's, so that others judge it by it
}

// sweepEvery returns the background work of a sweeper of b every
// interval and its metrics, or nils for an interval of 0 (no sweeping).
func sweepEvery(b bucket.Bucket, log *slog.Logger, interval time.Duration) (func(context.Context), func() []serve.Sample) {
	if interval <= 0 {
		return nil, nil
	}
	s := newSweeper(b, log, interval)
	return s.run, s.samples
}

// samples are the sweeper's series for /metrics.
func (s *sweeper) samples() []serve.Sample {
	held := 0.0
	if s.holding.Load() {
		held = 1
	}
	return []serve.Sample{
		{Name: "cairn_sweeps_total", Type: "counter", Help: "Background sweeps of the bucket this replica ran (it held the sweep lease).", Value: float64(s.sweeps.Load())},
		{Name: "cairn_sweep_failures_total", Type: "counter", Help: "Shards whose background sweep failed (the log has the cause).", Value: float64(s.failures.Load())},
		{Name: "cairn_sweep_deleted_objects_total", Type: "counter", Help: "Objects the background sweeps deleted.", Value: float64(s.deletedObjects.Load())},
		{Name: "cairn_sweep_deleted_bytes_total", Type: "counter", Help: "Bytes of the objects the background sweeps deleted.", Value: float64(s.deletedBytes.Load())},
		{Name: "cairn_sweep_last_timestamp_seconds", Type: "gauge", Help: "When this replica's last background sweep ended, in Unix seconds; 0 before the first.", Value: float64(s.lastSweep.Load())},
		{Name: "cairn_sweep_lease_held", Type: "gauge", Help: "1 while this replica holds the bucket's sweep lease, else 0.", Value: held},
	}
}

func newSweeper(b bucket.Bucket, log *slog.Logger, interval time.Duration) *sweeper {
	var r [8]byte
	rand.Read(r[:])
	return &sweeper{b: b, log: log, interval: interval, id: hex.EncodeToString(r[:])}
}

// run sweeps until ctx ends. The first turn comes an interval after the
// start, so that replicas started together do not all probe at once.
func (s *sweeper) run(ctx context.Context) {
	for {
		jitter := time.Duration(mrand.Int64N(int64(s.interval)/10 + 1))
		if bucket.Sleep(ctx, s.interval+jitter) != nil {
			return
		}
		held := s.take(ctx)
		s.holding.Store(held)
		if held {
			s.sweep(ctx)
		}
	}
}

// take reports whether this replica holds the lease for this turn,
// taking it or renewing it if it may.
func (s *sweeper) take(ctx context.Context) bool {
	body, err := json.Marshal(sweepLease{Holder: s.id, Interval: s.interval.String()})
	if err != nil {
		return false
	}
	raw, attrs, err := s.b.Get(ctx, sweepLeaseKey)
	if errors.Is(err, bucket.ErrNotExist) {
		_, err = s.b.Put(ctx, sweepLeaseKey, body, bucket.IfAbsent())
		return s.took(err, "created")
	}
	if err != nil {
		s.log.Warn("sweep lease: read", slog.String("error", err.Error()))
		return false
	}
	var held sweepLease
	if json.Unmarshal(raw, &held) != nil {
		held = sweepLease{} // unreadable: anyone's to take once stale
	}
	if held.Holder != s.id {
		wait := 2 * s.interval
		if d, err := time.ParseDuration(held.Interval); err == nil && 2*min(d, maxSweepInterval) > wait {
			wait = 2 * min(d, maxSweepInterval) // a year at most: another replica's setting, read from the bucket
		}
		if attrs.Version != s.seen {
			s.seen, s.seenSince = attrs.Version, time.Now()
			return false
		}
		if time.Since(s.seenSince) < wait {
			return false
		}
	}
	_, err = s.b.Put(ctx, sweepLeaseKey, body, bucket.IfVersion(attrs.Version))
	return s.took(err, "renewed or taken over")
}

func (s *sweeper) took(err error, how string) bool {
	if err == nil {
		s.log.Debug("sweep lease "+how, slog.String("holder", s.id))
		return true
	}
	if !errors.Is(err, bucket.ErrPrecondition) {
		s.log.Warn("sweep lease: write", slog.String("error", err.Error()))
	}
	return false // another replica wrote it first
}

// sweep sweeps every Workbench shard of the bucket, then its temporary
// files, and logs what it deleted.
func (s *sweeper) sweep(ctx context.Context) {
	start := time.Now()
	targets, err := workbenchShards(ctx, s.b)
	if err != nil {
		s.failures.Add(1)
		s.log.Warn("sweep: list shards", slog.String("error", err.Error()))
		return
	}
	var deleted, bytes int64
	grace := time.Duration(0)
	for _, tg := range targets {
		rep, err := gcsweep.Sweep(ctx, s.b, tg.layout, workbench.SweepOptions())
		if errors.Is(err, gcsweep.ErrMarker) {
			continue // not a Workbench shard
		}
		if rep != nil {
			deleted += rep.Deleted.Objects
			bytes += rep.Deleted.Bytes
			grace = max(grace, time.Duration(rep.Grace))
		}
		if err != nil {
			s.failures.Add(1)
			s.log.Warn("sweep", slog.String("shard", tg.layout.ID().String()), slog.String("error", err.Error()))
		}
	}
	s.sweeps.Add(1)
	s.deletedObjects.Add(deleted)
	s.deletedBytes.Add(bytes)
	s.lastSweep.Store(time.Now().Unix())
	temps := 0
	if tr, ok := s.b.(bucket.TempRemover); ok && grace > 0 {
		if temps, err = tr.RemoveTemps(ctx, grace, false); err != nil {
			s.log.Warn("sweep: temporary files", slog.String("error", err.Error()))
		}
	}
	s.log.Info("swept", slog.Int("shards", len(targets)), slog.Int64("objects_deleted", deleted),
		slog.Int64("bytes_deleted", bytes), slog.Int("temporary_files_removed", temps),
		slog.Duration("took", time.Since(start)))
}
