package gcsweep

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/cairnstore/cairn/bucket"
	"github.com/cairnstore/cairn/bucket/digest"
	"github.com/cairnstore/cairn/manifests"
	"github.com/cairnstore/cairn/shards"
)

// PinFormat is the format member of a pin document.
const PinFormat = "cairn.pin.v1"

// ErrBadPin is returned for a pin object that is not a pin of the shard.
// A sweep that meets one stops before deleting anything: it cannot know
// which root the pin keeps.
var ErrBadPin = errors.New("gcsweep: bad pin")

// Pin is one pin: a create-only, immutable canonical JSON object under
// shards.Layout.Pin(name) that keeps a root, and everything it reaches,
// from every sweep until the pin is deleted.
type Pin struct {
	Name     string      `json:"-"`
	Key      string      `json:"-"`
	RootHash digest.Hash `json:"-"`

	Format    string `json:"format"` // PinFormat
	Shard     string `json:"shard"`  // the logical shard id, 32 lowercase hex
	Sequence  uint64 `json:"sequence"`
	Root      string `json:"root"` // 64 lowercase hex
	CreatedMS int64  `json:"created_unix_ms"`
	Note      string `json:"note"`
}

// DecodePin decodes the bytes of the pin under key strictly and checks
// that it belongs to layout's shard.
func DecodePin(layout shards.Layout, key string, body []byte) (Pin, error) {
	var p Pin
	if err := manifests.DecodeStrict(body, &p); err != nil {
		return Pin{}, fmt.Errorf("%w: %s: %w", ErrBadPin, key, err)
	}
	if p.Format != PinFormat {
		return Pin{}, fmt.Errorf("%w: %s: format %q, want %q", ErrBadPin, key, p.Format, PinFormat)
	}
	if p.Shard != layout.ID().String() {
		return Pin{}, fmt.Errorf("%w: %s: names shard %q, want %s", ErrBadPin, key, p.Shard, layout.ID())
	}
	h, err := digest.Parse(p.Root)
	if err != nil || h.IsZero() {
		return Pin{}, fmt.Errorf("%w: %s: root %q", ErrBadPin, key, p.Root)
	}
	p.Key, p.Name, p.RootHash = key, strings.TrimPrefix(key, layout.PinsPrefix()), h
	return p, nil
}

// ListPins returns every pin of layout's shard, in key order. A pin that
// cannot be read or decoded is an error (ErrBadPin for one that is not a
// pin of the shard).
func ListPins(ctx context.Context, b bucket.Bucket, layout shards.Layout) ([]Pin, error) {
	objs, _, err := bucket.ListAll(ctx, b, bucket.ListOptions{Prefix: layout.PinsPrefix()})
	if err != nil {
		return nil, fmt.Errorf("gcsweep: list pins: %w", err)
	}
	pins := make([]Pin, 0, len(objs))
	for _, o := range objs {
		body, _, err := b.Get(ctx, o.Key)
		if errors.Is(err, bucket.ErrNotExist) {
			continue // unpinned since the listing
		}
		if err != nil {
			return nil, fmt.Errorf("gcsweep: read pin %s: %w", o.Key, err)
		}
		p, err := DecodePin(layout, o.Key, body)
		if err != nil {
			return nil, err
		}
		pins = append(pins, p)
	}
	return pins, nil
}
