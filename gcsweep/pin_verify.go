package gcsweep

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/cairnstore/cairn/bucket"
	"github.com/cairnstore/cairn/bucket/digest"
	"github.com/cairnstore/cairn/head"
	"github.com/cairnstore/cairn/roots/walk"
	"github.com/cairnstore/cairn/shards"
)

// Checking what a pin keeps.

// Problem is one object a pinned root reaches that is not intact, or
// that disagrees with the reference that named it
// (head.ErrInconsistent).
type Problem struct {
	Object  walk.Object
	Missing bool  // not in the bucket; otherwise its bytes are wrong
	Err     error // what reading, checking or decoding it said
}

func (p Problem) String() string {
	s := fmt.Sprintf("damaged %s %s: %v", p.Object.Kind, p.Object.Key, p.Err)
	switch {
	case p.Missing:
		s = fmt.Sprintf("missing %s %s", p.Object.Kind, p.Object.Key)
	case errors.Is(p.Err, head.ErrInconsistent):
		return fmt.Sprintf("inconsistent %s %s: %v", p.Object.Kind, p.Object.Key, p.Err)
	}
	if p.Object.Kind != walk.KindBlock {
		s += " (what it references was not reached)"
	}
	return s
}

// VerifyReport is what VerifyPin found.
type VerifyReport struct {
	Objects  int64 // objects the root reaches that were read whole and hash to their names (inline entries are not objects)
	Bytes    int64 // their bytes
	Problems []Problem
	Elapsed  time.Duration
}

// VerifyOptions tune VerifyPin and CopyPin.
type VerifyOptions struct {
	// Concurrency bounds the objects read (or copied) at once. Default
	// DefaultConcurrency.
	Concurrency int
	// Total, if set, is called once CopyPin knows how many objects it
	// has to do (VerifyPin does not know before it is done).
	Total func(objects int64)
	// Progress, if set, is called after each object, with its size.
	Progress func(bytes int64)
}

func (o *VerifyOptions) fill() {
	if o.Concurrency <= 0 {
		o.Concurrency = DefaultConcurrency
	}
	if o.Progress == nil {
		o.Progress = func(int64) {}
	}
	if o.Total == nil {
		o.Total = func(int64) {}
	}
}

// VerifyPin reads every object the pinned root reaches, the blocks refs
// finds in its records included, and checks each as a verifying walk
// does (walk.Options.Verify), the checks head.Check and fsck make:
// against its hash (a block's slice against its digest), decoded, and
// against the reference that named it. Each missing, damaged or
// inconsistent object is a Problem; the walk goes on without what a
// missing or damaged object would have led to. The error is for a
// failure to verify at all: the bucket unreachable, ctx ended.
func VerifyPin(ctx context.Context, b bucket.Bucket, layout shards.Layout, p Pin, refs walk.Refs, opts VerifyOptions) (VerifyReport, error) {
	rep, err := VerifyRoot(ctx, b, layout, p.RootHash, refs, opts)
	if err != nil {
		return rep, fmt.Errorf("pin %s: %w", p.Name, err)
	}
	return rep, nil
}

// VerifyRoot is VerifyPin for any root of the shard: it reads every object
// root reaches, blocks included, and checks each; each missing or damaged
// object is a Problem. Recovery (cairn recover) verifies the root it
// would make current with it.
func VerifyRoot(ctx context.Context, b bucket.Bucket, layout shards.Layout, root digest.Hash, refs walk.Refs, opts VerifyOptions) (VerifyReport, error) {
	opts.fill()
	start := time.Now()
	var rep VerifyReport
	wopts := walk.Options{
		Verify:      true,
		Concurrency: opts.Concurrency,
		OnError: func(o walk.Object, err error) error {
			if ctx.Err() != nil || unreachable(err) {
				return err // not a finding: the check could not be made
			}
			rep.Problems = append(rep.Problems, Problem{Object: o, Missing: errors.Is(err, bucket.ErrNotExist), Err: err})
			return nil
		},
	}
	err := walk.Walk(ctx, b, layout, root, refs, wopts, func(o walk.Object) error {
		rep.Objects++
		rep.Bytes += o.Size
		opts.Progress(o.Size)
		return nil
	})
	sort.Slice(rep.Problems, func(i, j int) bool { return rep.Problems[i].Object.Key < rep.Problems[j].Object.Key })
	rep.Elapsed = time.Since(start)
	if err != nil {
		return rep, fmt.Errorf("gcsweep: verify root %s: %w", root, err)
	}
	return rep, nil
}

// unreachable reports whether err says the store could not answer, as
// opposed to an answer that the object is missing or damaged.
func unreachable(err error) bool {
	return errors.Is(err, bucket.ErrUnavailable) || errors.Is(err, bucket.ErrThrottled) ||
		errors.Is(err, bucket.ErrAmbiguous) || bucket.Permanent(err)
}
