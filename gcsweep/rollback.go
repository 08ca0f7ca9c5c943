package gcsweep

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/cairnstore/cairn/bucket"
	"github.com/cairnstore/cairn/bucket/digest"
	"github.com/cairnstore/cairn/head"
	"github.com/cairnstore/cairn/roots"
	"github.com/cairnstore/cairn/shards"
)

// A head older than the bucket's history.
//
// The head is the one mutable object; putting an older head object back
// (a restore of the bucket from a backup, a mistake) makes everything
// committed after it unreachable, and a sweep would delete it. Roots
// carry their sequence, pins theirs: a root of a sequence above the
// head's + 1, or of the head's + 1 but stamped by the store before the
// head was written, or a pin of a sequence above the head's, cannot come
// from this head's history. (An attempt that lost its race stages a root
// of the pinned sequence + 1, always after it read that head.) Only a
// rollback of exactly the last commit, overwritten since by a new one,
// leaves nothing to tell it from a lost race.

// Rollback is what a check for a rolled-back head found.
type Rollback struct {
	HeadSequence uint64
	// Root and Sequence name the newest evidence: a root (or a pin's
	// root) of a later history.
	Root     digest.Hash
	Sequence uint64
	Pin      string // the pin that names it, if a pin told
}

func (r *Rollback) Error() string {
	by := "root"
	if r.Pin != "" {
		by = "pin " + r.Pin + " of root"
	}
	return fmt.Sprintf("%v: the head is at sequence %d, and %s %s is of sequence %d; an older head was put back, and nothing may be deleted until the newest head is restored (docs/operations.md)",
		ErrRollback, r.HeadSequence, by, r.Root, r.Sequence)
}

func (r *Rollback) Unwrap() error { return ErrRollback }

// rollbackOf reports the newest of the roots and pins given that cannot
// belong to the history of a head of sequence seq written at headTime;
// nil when none.
func rollbackOf(seq uint64, headTime time.Time, rs []seenRoot, pins []Pin) *Rollback {
	var found *Rollback
	note := func(r digest.Hash, s uint64, pin string) {
		if found == nil || s > found.Sequence {
			found = &Rollback{HeadSequence: seq, Root: r, Sequence: s, Pin: pin}
		}
	}
	for _, r := range rs {
		switch {
		case r.seq > seq+1:
			note(r.hash, r.seq, "")
		case r.seq == seq+1 && !headTime.IsZero() && !r.stamp.IsZero() && r.stamp.Before(headTime):
			note(r.hash, r.seq, "")
		}
	}
	for _, p := range pins {
		if p.Sequence > seq {
			note(p.RootHash, p.Sequence, p.Name)
		}
	}
	return found
}

// seenRoot is a root read for the check: its hash, sequence and store
// time.
type seenRoot struct {
	hash  digest.Hash
	seq   uint64
	stamp time.Time
}

// readRoots reads the sequence of every root of objs (listed objects of
// the shard's roots/ prefix); a root gone since the listing is skipped,
// one that does not decode is an error.
func readRoots(ctx context.Context, b bucket.Bucket, layout shards.Layout, objs []bucket.Attrs, concurrency int) ([]seenRoot, error) {
	var mu sync.Mutex
	var out []seenRoot
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(concurrency)
	for _, o := range objs {
		k, err := shards.ParseObjectKey(layout.Schema(), o.Key)
		if err != nil || k.Kind != shards.KindRoot || k.Shard != layout.ID() {
			continue
		}
		g.Go(func() error {
			body, _, err := b.Get(gctx, o.Key)
			if err != nil {
				if errors.Is(err, bucket.ErrNotExist) {
					return nil
				}
				return fmt.Errorf("gcsweep: read root %s: %w", k.Hash, err)
			}
			r, err := roots.DecodeRoot(layout.Schema(), body, k.Hash)
			if err != nil {
				return fmt.Errorf("gcsweep: root %s: %w", k.Hash, err)
			}
			mu.Lock()
			out = append(out, seenRoot{hash: k.Hash, seq: r.Sequence, stamp: o.ModTime})
			mu.Unlock()
			return nil
		})
	}
	return out, g.Wait()
}

// checkRollback reads every listed root the mark did not reach and stops
// the sweep, before anything is deleted, if one of them or a pin is newer
// than the newest head it read.
func (s *sweeper) checkRollback(ctx context.Context, pins []Pin) error {
	var unmarked []bucket.Attrs
	for _, o := range s.objs {
		if o.class == ClassRoot && !s.w.Reached(o.Key) {
			unmarked = append(unmarked, o.Attrs)
		}
	}
	rs, err := readRoots(ctx, s.b, s.layout, unmarked, s.opts.Concurrency)
	if err != nil {
		return err
	}
	s.rep.RootsChecked = len(rs)
	if rb := rollbackOf(s.last.Sequence, s.lastAt, rs, pins); rb != nil {
		return rb
	}
	return nil
}

// FindRollback lists the shard's roots and pins and reports a head older
// than any of them (nil when the head is not). It reads every root, so it
// costs a request per root: cairn fsck's check, which a sweep makes of
// the roots it would delete.
func FindRollback(ctx context.Context, b bucket.Bucket, layout shards.Layout) (*Rollback, error) {
	h, attrs, err := readHeadAttrs(ctx, b, layout)
	if err != nil || h == nil {
		return nil, err
	}
	objs, _, err := bucket.ListAll(ctx, b, bucket.ListOptions{Prefix: layout.Prefix() + "roots/"})
	if err != nil {
		return nil, fmt.Errorf("gcsweep: list roots: %w", err)
	}
	rs, err := readRoots(ctx, b, layout, objs, DefaultConcurrency)
	if err != nil {
		return nil, err
	}
	pins, err := ListPins(ctx, b, layout)
	if err != nil {
		return nil, err
	}
	return rollbackOf(h.Sequence, attrs.ModTime, rs, pins), nil
}

// readHeadAttrs reads the head without checking its marker.
func readHeadAttrs(ctx context.Context, b bucket.Bucket, layout shards.Layout) (*head.Head, bucket.Attrs, error) {
	s := &sweeper{b: b, layout: layout}
	return s.readHead(ctx)
}
