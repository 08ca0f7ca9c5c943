package head

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/cairnstore/cairn/bucket"
	"github.com/cairnstore/cairn/bucket/digest"
	"github.com/cairnstore/cairn/manifests"
	"github.com/cairnstore/cairn/shards"
)

// The collection horizon: the one rule that lets a sweep delete what no
// root reaches while writers that may pause for any length of time go on.
//
// Every age is read on the store's clock: the time the bucket records for
// each object it writes (bucket.Attrs.ModTime), and for the head. A
// process's own clocks never enter, so a writer stopped for an hour (a
// SIGSTOP, a suspended VM whose monotonic clock stood still) learns on
// resuming exactly what a sweep that ran meanwhile could have deleted.
//
// A deployment root has one grace period G, a record of its own state
// (the system family's "collection" record, DefaultGrace when absent), so
// writers and sweeps read the same value, at the same root, and a change
// of it is one more commit.
//
//   - The sweep reads the head H_s, of store time T_s, and deletes an
//     object nothing it marked reaches only if the store stamped it
//     before its horizon, T_s − G.
//   - An attempt built on a head H of store time T_H has the floor
//     T_H − G/2. Every object its candidate root names is either reachable
//     from its parent root or stamped at or after the floor. The engine's
//     own objects are written after the head was read, so the store
//     stamps them after T_H; the attempt checks the stamps the store
//     returned (a store clock that went back by more than G/2 abandons the
//     attempt). What a product wrote earlier and names now (an artifact
//     body uploaded before its command) it checks against Tx.Floor, and
//     writes again under a fresh name when it is older.
//
// Why no head that lands names a deleted object: take a sweep that read
// the head H_s, of store time T_s, marked what its root reaches and
// deletes only what it did not mark and the store stamped before T_s − G.
// A later head H_k (k > s) is written by an attempt built on H_{k−1}, so
// every object its root reaches is reachable from H_{k−1}'s root or
// stamped at or after T_{k−1} − G/2 ≥ T_s − G/2. By induction from H_s,
// whose root the sweep marked, every object any later root reaches was
// marked or is younger than the horizon: the sweep keeps it. An attempt
// built on a head older than H_s cannot land after the sweep read H_s:
// its head write is conditional on the version it read, and the head has
// moved. No local clock enters, and no value of G breaks the rule: G
// bounds how long garbage lives, and how long a paused process may wait
// before it must write again what it names. The margin of G/2 covers
// stores whose times are whole seconds and may differ by one between a
// write's answer and a later listing; hence MinGrace.

// Bounds of a deployment root's grace period.
const (
	// DefaultGrace is the grace of a root that records none: an hour.
	DefaultGrace = time.Hour
	// MinGrace is the shortest grace a root may record. Stores report
	// times to the second (GCS, S3), and a write's answer and a later
	// listing may differ by one, which the floor's margin (G/2) must
	// cover.
	MinGrace = 2 * time.Second
	// MaxGrace is the longest: a year.
	MaxGrace = 366 * 24 * time.Hour
)

// CollectionKey is the system family's key of the collection record.
var CollectionKey = []byte("collection")

// Collection is the system record that says how a deployment root's
// garbage is collected. Its bytes are canonical JSON.
type Collection struct {
	GraceMS int64 `json:"grace_ms"`
}

// ErrGrace is returned for a grace period outside MinGrace..MaxGrace.
var ErrGrace = fmt.Errorf("head: the grace period must be between %v and %v", MinGrace, MaxGrace)

// ErrStale is the error of an attempt that would name an object the
// store stamped before the attempt's floor: a sweep may delete it before
// the head write lands. Nothing is written; the caller writes the object
// again under a fresh name (the engine retries its own attempts).
var ErrStale = errors.New("head: an object to be named is older than the attempt's floor")

// CheckGrace reports whether d is a grace a root may record.
func CheckGrace(d time.Duration) error {
	if d < MinGrace || d > MaxGrace {
		return fmt.Errorf("%w: %v", ErrGrace, d)
	}
	return nil
}

// Horizon is the time before which a sweep that read a head of store
// time headTime may delete what it did not mark: headTime − grace. The
// zero time (a store that reports no times) deletes nothing.
func Horizon(headTime time.Time, grace time.Duration) time.Time {
	if headTime.IsZero() {
		return time.Time{}
	}
	return headTime.Add(-grace)
}

// floorOf is the floor of an attempt built on a head of store time
// headTime: headTime − grace/2. The zero time when the store reports no
// times: such a store is never swept of anything (Horizon).
func floorOf(headTime time.Time, grace time.Duration) time.Time {
	if headTime.IsZero() {
		return time.Time{}
	}
	return headTime.Add(-grace / 2)
}

// Grace returns the grace period the snapshot's root records
// (DefaultGrace when it records none).
func (sn *Snapshot) Grace(ctx context.Context) (time.Duration, error) {
	if sn.empty {
		return DefaultGrace, nil
	}
	v, ok, err := sn.get(ctx, shards.System, CollectionKey)
	if err != nil {
		return 0, fmt.Errorf("head: read the collection record: %w", err)
	}
	if !ok {
		return DefaultGrace, nil
	}
	return decodeCollection(v)
}

// Floor returns the floor of an attempt built on the snapshot: an object
// such an attempt names, and that the snapshot's root does not reach,
// must carry a store time at or after it. Zero when the store reports no
// times.
func (sn *Snapshot) Floor(ctx context.Context) (time.Time, error) {
	g, err := sn.Grace(ctx)
	if err != nil {
		return time.Time{}, err
	}
	return floorOf(sn.storeTime, g), nil
}

func decodeCollection(v []byte) (time.Duration, error) {
	var c Collection
	if err := manifests.DecodeStrict(v, &c); err != nil {
		return 0, fmt.Errorf("head: collection record %q: %w: %w", v, err, bucket.ErrIntegrity)
	}
	d := time.Duration(c.GraceMS) * time.Millisecond
	if err := CheckGrace(d); err != nil {
		return 0, fmt.Errorf("head: collection record %q: %w: %w", v, err, bucket.ErrIntegrity)
	}
	return d, nil
}

// GraceAt returns the grace period root records, reading straight from
// the bucket (the sweep's reader, which opens no Store).
func GraceAt(ctx context.Context, b bucket.Bucket, layout shards.Layout, root digest.Hash) (time.Duration, error) {
	s := newReader(b, layout)
	sn, err := s.At(ctx, root)
	if err != nil {
		return 0, err
	}
	return sn.Grace(ctx)
}

// newReader returns a Store that reads layout's shard and writes nothing:
// a small cache, no schema gate (its callers read only the engine's own
// records).
func newReader(b bucket.Bucket, layout shards.Layout) *Store {
	return newStore(b, layout, Options{CacheBytes: 4 << 20})
}

// SetGrace records d as the deployment root's grace period, in one
// commit (none when it already records d). Writers read the grace from
// the snapshot their attempt is built on, and a sweep from the head it
// read, so a change is safe whichever way it goes: an attempt built on a
// head before the change cannot land after it.
func (s *Store) SetGrace(ctx context.Context, d time.Duration) error {
	if err := CheckGrace(d); err != nil {
		return err
	}
	v, err := manifests.Encode(Collection{GraceMS: d.Milliseconds()})
	if err != nil {
		return err
	}
	_, err = s.Do(ctx, Command{Apply: func(tx *Tx) ([]byte, error) {
		cur, ok, err := tx.Get(shards.System, CollectionKey)
		if err != nil || (ok && string(cur) == string(v)) {
			return nil, err
		}
		return nil, tx.own.put(shards.System, CollectionKey, v)
	}})
	return err
}

// Touch commits a root with the state of the current one, so that the
// head's store time becomes the present: a sweep run right after has its
// horizon a grace period before now, not before the last write. It
// returns the snapshot of the head it wrote. A shard never written is
// left as it is (nil, nil).
func (s *Store) Touch(ctx context.Context) (*Snapshot, error) {
	sn, err := s.PinOrEmpty(ctx)
	if err != nil || sn.empty {
		return nil, err
	}
	res, err := s.Do(ctx, Command{Apply: func(tx *Tx) ([]byte, error) {
		tx.own.touched = true
		return nil, nil
	}})
	if err != nil {
		return nil, err
	}
	sn, err = s.Pin(ctx)
	if err != nil {
		return nil, err
	}
	if sn.head.Sequence < res.Sequence {
		return nil, fmt.Errorf("head: touch landed at sequence %d, the head reads %d: %w", res.Sequence, sn.head.Sequence, ErrHeadRolledBack)
	}
	return sn, nil
}
