package gcsweep

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/cairnstore/cairn/bucket"
	"github.com/cairnstore/cairn/bucket/digest"
	"github.com/cairnstore/cairn/head"
)

// The sweep's heads and horizon: the heads it reads and writes, the
// horizon it counts from them, and the roots it keeps for having been
// the head since.

// remark reads the head again until it stands still, marking every head
// that moved (with its chain back to what is marked), and returns the
// version it last read.
func (s *sweeper) remark(ctx context.Context, version bucket.Version) (bucket.Version, error) {
	for range maxRemarks {
		again, a, err := s.readHeadAgain(ctx)
		if err != nil {
			return version, err
		}
		if a.Version == version {
			return version, nil
		}
		version = a.Version
		s.noteHead(again, a)
		s.rep.HeadMoves++
		if err := s.markHead(ctx, again); err != nil {
			return version, err
		}
	}
	return version, nil
}

// readHeadAgain reads the head of a shard that has one.
func (s *sweeper) readHeadAgain(ctx context.Context) (*head.Head, bucket.Attrs, error) {
	h, a, err := s.readHead(ctx)
	if err == nil && h == nil {
		err = fmt.Errorf("%w: the head vanished during the sweep", ErrNoHead)
	}
	return h, a, err
}

// writeHead makes the sweep's own commits: the grace (SetGrace), then an
// empty one (Touch).
func (s *sweeper) writeHead(ctx context.Context) error {
	st, err := head.Open(ctx, s.b, s.layout.ID(), head.Schema{Marker: *s.opts.Marker, Families: s.layout.Schema()}, head.Options{})
	if err != nil {
		return err
	}
	defer st.Close()
	if s.opts.SetGrace {
		if err := st.SetGrace(ctx, s.opts.Grace); err != nil {
			return fmt.Errorf("gcsweep: record the grace period: %w", err)
		}
	}
	if s.opts.Touch {
		if _, err := st.Touch(ctx); err != nil {
			return fmt.Errorf("gcsweep: touch the head: %w", err)
		}
		s.rep.Touched = true
	}
	return nil
}

// noteHead records a head the sweep read and its store time.
func (s *sweeper) noteHead(h *head.Head, attrs bucket.Attrs) {
	root, _ := digest.Parse(h.Root)
	if t, ok := s.became[root]; !ok || attrs.ModTime.Before(t) {
		s.became[root] = attrs.ModTime
	}
	if s.last == nil || h.Sequence >= s.last.Sequence {
		s.last, s.lastAt = h, attrs.ModTime
	}
}

// setHorizon reads the grace period the head's root records and sets the
// horizon from the head's store time.
func (s *sweeper) setHorizon(ctx context.Context, h *head.Head, headTime time.Time) error {
	g := head.DefaultGrace // a genesis head's root records nothing
	if !h.Genesis() {
		var err error
		if g, err = head.GraceAt(ctx, s.b, s.layout, h.RootHash()); err != nil {
			return fmt.Errorf("gcsweep: read the deployment root's grace: %w", err)
		}
	}
	if s.opts.Grace != 0 && s.opts.Grace < g && !s.opts.SetGrace {
		return fmt.Errorf("%w: %v, and the deployment root records %v", ErrGrace, s.opts.Grace, g)
	}
	if s.opts.Grace != 0 {
		g = s.opts.Grace
	}
	s.rep.Grace, s.rep.HeadTime = Duration(g), headTime
	s.horizon = head.Horizon(headTime, g)
	s.rep.Horizon = s.horizon
	return nil
}

// stale reports whether the store stamped an object before the horizon.
func (s *sweeper) stale(a bucket.Attrs) bool {
	return !s.horizon.IsZero() && !a.ModTime.IsZero() && a.ModTime.Before(s.horizon)
}

// markHead marks a head's root, with its holds, and the roots before it
// that may have been the head at or after the horizon.
//
// A root was the head until its child became the head. That happened no
// later than the store time of a head the sweep read naming the child
// (became), and before the child's own child was staged, since that
// attempt read the child's head first: the store time of the listed
// grandchild bounds it. A parent is kept while that bound is at or after
// the horizon; a bound the sweep does not know keeps it.
func (s *sweeper) markHead(ctx context.Context, h *head.Head) error {
	s.rep.HeadSequence, s.rep.HeadRoot = h.Sequence, h.Root
	if h.Genesis() {
		return nil // no root: nothing committed to keep
	}
	root := h.RootHash()
	if err := s.w.Walk(ctx, root); err != nil {
		return fmt.Errorf("gcsweep: head %d: %w", h.Sequence, err)
	}
	s.keep(root, KeptHead)
	child, became := root, s.became[root]
	for {
		s.mu.Lock()
		parent := s.parents[child]
		s.mu.Unlock()
		if parent.IsZero() || s.horizon.IsZero() || (!became.IsZero() && became.Before(s.horizon)) {
			return nil
		}
		key := s.layout.Root(parent)
		if s.isKept(parent) {
			return nil // kept with its chain already (a root only held is not)
		}
		if _, ok := s.times[key]; !ok {
			// Not listed: written since the listing (a head that moved
			// meanwhile, the sweep's own commits), or deleted by an
			// earlier sweep, which ends the chain.
			a, err := s.b.Stat(ctx, key)
			if errors.Is(err, bucket.ErrNotExist) {
				return nil
			}
			if err != nil {
				return fmt.Errorf("gcsweep: root %s, parent of %s: %w", parent, child, err)
			}
			s.mu.Lock()
			s.times[key] = a.ModTime
			s.mu.Unlock()
		}
		if err := s.w.Walk(ctx, parent); err != nil {
			return fmt.Errorf("gcsweep: root %s, parent of %s: %w", parent, child, err)
		}
		s.keep(parent, KeptGrace)
		s.rep.RootsInGrace++
		// The parent became the head before the child was staged.
		became = s.times[s.layout.Root(child)]
		if t, ok := s.became[parent]; ok && (became.IsZero() || t.Before(became)) {
			became = t
		}
		child = parent
	}
}
