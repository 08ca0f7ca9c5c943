package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"log/slog"
	mrand "math/rand/v2"
	"time"

	"github.com/cairnstore/cairn/bucket"
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
}

// sweepLease is the lease object's body.
type sweepLease struct {
	Holder   string `json:"holder"`
	Interval string `json:"interval"` // the holder's, so that others judge it by it
}

// sweepEvery returns the background work of a sweeper of b every
// interval, or nil for an interval of 0 (no sweeping).
func sweepEvery(b bucket.Bucket, log *slog.Logger, interval time.Duration) func(context.Context) {
	if interval <= 0 {
		return nil
	}
	return newSweeper(b, log, interval).run
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
		if s.take(ctx) {
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
			s.log.Warn("sweep", slog.String("shard", tg.layout.ID().String()), slog.String("error", err.Error()))
		}
	}
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
