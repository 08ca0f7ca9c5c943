package head

import (
	"context"
	"errors"
	"slices"
	"strings"

	"github.com/cairnstore/cairn/bucket"
	"github.com/cairnstore/cairn/bucket/digest"
	"github.com/cairnstore/cairn/roots/walk"
	"github.com/cairnstore/cairn/shards"
)

// CheckOptions tune Check.
type CheckOptions struct {
	// Strict also checks each root the holds of root name the same way
	// (not only that it exists). Holds keep one level
	// (roots.Root.KeptHolds): the holds of a held root are not followed.
	Strict bool
	// MaxFindings stops after this many findings. Default 100.
	MaxFindings int
}

// Check verifies the snapshot a root names, reading straight from the
// bucket (no cache): every reachable object exists and hashes to its name,
// each decodes canonically, every record sits in the shard its key
// selects (and, in a page, in the page's key range of each index that
// names it) (or, in a delta segment, passes its family's key check),
// every table agrees with its root entry (family, shard count, record
// count, size), every shard object and page index with its table entry
// (record count, size), and every delta segment with its root's
// reference (size, records, sequence). It returns nil or an error joining
// every finding, in the order of their text. The zero hash names the
// state of a genesis head (Head.RootHash): no root and no record, so
// nothing to check.
//
// Check is a verifying walk (walk.Walk with walk.Options.Verify, no Refs): the
// objects it reads and the checks it makes are those of the sweep's
// mark, pin verify and fsck. Without Strict the roots the holds name are
// only Stat'ed (walk.Options.StatHeld).
func Check(ctx context.Context, b bucket.Bucket, layout shards.Layout, root digest.Hash, opts CheckOptions) error {
	if root.IsZero() {
		return nil
	}
	if opts.MaxFindings <= 0 {
		opts.MaxFindings = 100
	}
	var findings []error
	wopts := walk.Options{
		Verify:   true,
		StatHeld: !opts.Strict,
		OnError: func(_ walk.Object, err error) error {
			if len(findings) >= opts.MaxFindings {
				return errEnough
			}
			findings = append(findings, err)
			if len(findings) >= opts.MaxFindings {
				return errEnough
			}
			return nil
		},
	}
	err := walk.Walk(ctx, b, layout, root, nil, wopts, func(walk.Object) error { return nil })
	if err != nil && !errors.Is(err, errEnough) && len(findings) < opts.MaxFindings {
		findings = append(findings, err) // the walk ended early: ctx, for one
	}
	slices.SortFunc(findings, func(a, b error) int { return strings.Compare(a.Error(), b.Error()) })
	return errors.Join(findings...)
}

// errEnough ends a walk that has found all it was asked to.
var errEnough = errors.New("head: enough findings")
