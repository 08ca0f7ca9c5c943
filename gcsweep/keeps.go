package gcsweep

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/cairnstore/cairn/bucket"
	"github.com/cairnstore/cairn/bucket/digest"
	"github.com/cairnstore/cairn/manifests"
	"github.com/cairnstore/cairn/shards"
)

// Keeps: a root kept from every sweep while an operation that will name
// it is in flight.
//
// A commit may name only what its parent root reaches or what its own
// attempt wrote (the writer rule); a restore of a pinned state names the
// pinned root's tables, which the current root does not reach and which
// only the pin keeps. An operator may delete the pin while the restore
// runs, and the restore may pause for any length of time between its
// check of the pin and its head write. So before it checks the pin, the
// restore writes a keep naming the root (create-only, under a fresh key,
// outside the shard's prefix) and deletes it once its outcome is known.
// A sweep lists the pins, then the keeps, and marks what both name: a
// sweep that listed the keeps before the keep was written listed the
// pins earlier still, when the pin the restore found afterwards existed.
//
// A keep left by a process that died is deleted by the sweep once it is
// older than the horizon: by then the head has moved past any head the
// operation read before writing it, so the operation can no longer land.

// KeepFormat is the format member of a keep.
const KeepFormat = "cairn.keep.v1"

// Keep is one keep: canonical JSON, written once.
type Keep struct {
	Key      string      `json:"-"`
	RootHash digest.Hash `json:"-"`
	Stamp    time.Time   `json:"-"` // the store time of its write

	Format    string `json:"format"` // KeepFormat
	Shard     string `json:"shard"`
	Root      string `json:"root"`
	Reason    string `json:"reason"` // what keeps it, for an operator
	CreatedMS int64  `json:"created_unix_ms"`
}

// ErrBadKeep is returned for a keep that does not decode: a sweep that
// meets one deletes nothing, since it cannot know which root it keeps.
var ErrBadKeep = errors.New("gcsweep: bad keep")

// WriteKeep writes a keep of root, create-only under a fresh key, and
// returns it.
func WriteKeep(ctx context.Context, b bucket.Bucket, layout shards.Layout, root digest.Hash, reason string, now time.Time) (Keep, error) {
	var token [16]byte
	if _, err := rand.Read(token[:]); err != nil {
		return Keep{}, err
	}
	k := Keep{Key: layout.Keep(token), RootHash: root, Format: KeepFormat, Shard: layout.ID().String(),
		Root: root.String(), Reason: reason, CreatedMS: now.UnixMilli()}
	body, err := manifests.Encode(k)
	if err != nil {
		return Keep{}, err
	}
	attrs, err := b.Put(ctx, k.Key, body, bucket.IfAbsent())
	if errors.Is(err, bucket.ErrAmbiguous) || errors.Is(err, bucket.ErrPrecondition) {
		// A lost answer: the key is this call's own, so a keep there is ours.
		got, gattrs, gerr := b.Get(ctx, k.Key)
		if gerr == nil && string(got) == string(body) {
			attrs, err = gattrs, nil
		}
	}
	if err != nil {
		return Keep{}, fmt.Errorf("gcsweep: write keep of root %s: %w", root, err)
	}
	k.Stamp = attrs.ModTime
	return k, nil
}

// RestoreGuard keeps a pinned root from every sweep while a restore of
// it (head.Store.RestoreRoot) is in flight, however long the restore
// pauses: it writes a keep, then checks that the pin still names the
// root; before each head write (Check) it writes a new keep if the last
// one is older than the attempt's floor, and checks the pin again.
// Close deletes its keeps.
type RestoreGuard struct {
	b      bucket.Bucket
	layout shards.Layout
	pin    Pin
	now    func() time.Time
	keeps  []Keep
}

// NewRestoreGuard starts keeping pin's root. A pin that is gone, or names
// another root, is an error (the keep written is deleted).
func NewRestoreGuard(ctx context.Context, b bucket.Bucket, layout shards.Layout, pin Pin, now func() time.Time) (*RestoreGuard, error) {
	g := &RestoreGuard{b: b, layout: layout, pin: pin, now: now}
	if err := g.keep(ctx); err != nil {
		g.Close(ctx)
		return nil, err
	}
	return g, nil
}

// keep writes a keep, then checks the pin: a sweep that listed the
// keeps before this one was written listed the pins before that, while
// the pin existed.
func (g *RestoreGuard) keep(ctx context.Context) error {
	k, err := WriteKeep(ctx, g.b, g.layout, g.pin.RootHash, "restore of pin "+g.pin.Name, g.now())
	if err != nil {
		return err
	}
	g.keeps = append(g.keeps, k)
	return g.checkPin(ctx)
}

func (g *RestoreGuard) checkPin(ctx context.Context) error {
	cur, err := ReadPin(ctx, g.b, g.layout, g.pin.Name)
	if err != nil {
		return fmt.Errorf("gcsweep: pin %s no longer readable: %w", g.pin.Name, err)
	}
	if cur.RootHash != g.pin.RootHash {
		return fmt.Errorf("gcsweep: pin %s now names root %s, not %s", g.pin.Name, cur.Root, g.pin.Root)
	}
	return nil
}

// Check is head.RestoreOptions.Guard: the newest keep must be stamped at
// or after the attempt's floor (a sweep whose horizon passes it could
// not have read the head the attempt builds on), else a new one is
// written; and the pin must still name the root.
func (g *RestoreGuard) Check(ctx context.Context, floor time.Time) error {
	last := g.keeps[len(g.keeps)-1]
	if !last.Stamp.IsZero() && last.Stamp.Before(floor) {
		return g.keep(ctx)
	}
	return g.checkPin(ctx)
}

// Close deletes the guard's keeps; one it cannot delete is left to the
// sweep, which deletes it once past the horizon.
func (g *RestoreGuard) Close(ctx context.Context) {
	for _, k := range g.keeps {
		_ = DeleteKeep(ctx, g.b, k)
	}
	g.keeps = nil
}

// DeleteKeep removes k. A keep whose delete fails is the sweep's to
// remove later.
func DeleteKeep(ctx context.Context, b bucket.Bucket, k Keep) error {
	if err := b.Delete(ctx, k.Key, bucket.Unconditional); err != nil {
		return fmt.Errorf("gcsweep: delete keep %s: %w", k.Key, err)
	}
	return nil
}

// listedKeep is a keep and its listing.
type listedKeep struct {
	Keep
	attrs bucket.Attrs
}

// listKeeps reads every keep of layout's shard.
func listKeeps(ctx context.Context, b bucket.Bucket, layout shards.Layout) ([]listedKeep, error) {
	objs, _, err := bucket.ListAll(ctx, b, bucket.ListOptions{Prefix: layout.KeepsPrefix()})
	if err != nil {
		return nil, fmt.Errorf("gcsweep: list keeps: %w", err)
	}
	var out []listedKeep
	for _, o := range objs {
		body, _, err := b.Get(ctx, o.Key)
		if errors.Is(err, bucket.ErrNotExist) {
			continue // its operation ended since the listing
		}
		if err != nil {
			return nil, fmt.Errorf("gcsweep: read keep %s: %w", o.Key, err)
		}
		k, err := decodeKeep(layout, o.Key, body)
		if err != nil {
			return nil, err
		}
		out = append(out, listedKeep{Keep: k, attrs: o})
	}
	return out, nil
}

func decodeKeep(layout shards.Layout, key string, body []byte) (Keep, error) {
	var k Keep
	if err := manifests.DecodeStrict(body, &k); err != nil {
		return Keep{}, fmt.Errorf("%w: %s: %w", ErrBadKeep, key, err)
	}
	h, err := digest.Parse(k.Root)
	switch {
	case err != nil || h.IsZero():
		return Keep{}, fmt.Errorf("%w: %s: root %q", ErrBadKeep, key, k.Root)
	case k.Format != KeepFormat:
		return Keep{}, fmt.Errorf("%w: %s: format %q", ErrBadKeep, key, k.Format)
	case k.Shard != layout.ID().String() || !strings.HasPrefix(key, layout.KeepsPrefix()):
		return Keep{}, fmt.Errorf("%w: %s: names shard %q, want %s", ErrBadKeep, key, k.Shard, layout.ID())
	}
	k.Key, k.RootHash = key, h
	return k, nil
}
