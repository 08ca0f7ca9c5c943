package gcsweep

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/cairnstore/cairn/bucket"
	"github.com/cairnstore/cairn/bucket/digest"
	"github.com/cairnstore/cairn/manifests"
	"github.com/cairnstore/cairn/shards"
)

// PinFormat is the format member of a pin document.
const PinFormat = "cairn.pin.v1"

// MaxPinNote bounds a pin's note, in bytes.
const MaxPinNote = 1024

// Errors of pins, tested with errors.Is.
var (
	// ErrBadPin is returned for a pin object that is not a pin of the
	// shard. A sweep that meets one stops before deleting anything: it
	// cannot know which root the pin keeps.
	ErrBadPin = errors.New("gcsweep: bad pin")
	// ErrPinNotFound: no pin of that name. It is also bucket.ErrNotExist.
	ErrPinNotFound = fmt.Errorf("gcsweep: pin not found: %w", bucket.ErrNotExist)
	// ErrPinExists: a different pin of that name exists. Pins are never
	// replaced: delete the old one first.
	ErrPinExists = errors.New("gcsweep: pin exists")
)

// Pin is one pin: a create-only, immutable canonical JSON object under
// shards.Layout.Pin(name) that keeps a root, and everything it reaches,
// from every sweep until the pin is deleted. Its bytes are the members
// with a JSON name, sorted:
//
//	{"created_unix_ms":…,"format":"cairn.pin.v1","note":…,"root":"<hex>","sequence":…,"shard":"<lsid>"}
//
// Name, Key and RootHash are derived from the key and Root when a pin is
// decoded (or made by NewPin), never stored.
type Pin struct {
	Name     string      `json:"-"`
	Key      string      `json:"-"`
	RootHash digest.Hash `json:"-"`

	Format    string `json:"format"` // PinFormat
	Shard     string `json:"shard"`  // the logical shard id, 32 lowercase hex
	Sequence  uint64 `json:"sequence"`
	Root      string `json:"root"` // 64 lowercase hex
	CreatedMS int64  `json:"created_unix_ms"`
	Note      string `json:"note"` // at most MaxPinNote bytes of UTF-8
}

// NewPin returns the pin called name of layout's shard that keeps root,
// of sequence seq, made at created. The name must be a valid pin name
// (shards.Layout.Pin) and the note at most MaxPinNote bytes of UTF-8.
func NewPin(layout shards.Layout, name string, seq uint64, root digest.Hash, created time.Time, note string) (Pin, error) {
	key, err := layout.Pin(name)
	if err != nil {
		return Pin{}, err
	}
	p := Pin{
		Name: name, Key: key, RootHash: root,
		Format: PinFormat, Shard: layout.ID().String(), Sequence: seq, Root: root.String(),
		CreatedMS: created.UnixMilli(), Note: note,
	}
	if err := p.check(); err != nil {
		return Pin{}, fmt.Errorf("%w: %s: %w", ErrBadPin, key, err)
	}
	return p, nil
}

// Created returns the time the pin was made, to the millisecond.
func (p Pin) Created() time.Time { return time.UnixMilli(p.CreatedMS) }

// check reports what, beyond its shard, makes p no pin.
func (p Pin) check() error {
	switch {
	case p.Format != PinFormat:
		return fmt.Errorf("format %q, want %q", p.Format, PinFormat)
	case p.Sequence == 0:
		return errors.New("sequence 0")
	case p.RootHash.IsZero():
		return fmt.Errorf("root %q", p.Root)
	case len(p.Note) > MaxPinNote:
		return fmt.Errorf("note of %d bytes, at most %d", len(p.Note), MaxPinNote)
	case !utf8.ValidString(p.Note):
		return errors.New("note is not UTF-8")
	}
	return nil
}

// EncodePin returns the stored bytes of p.
func EncodePin(p Pin) ([]byte, error) {
	if err := p.check(); err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrBadPin, p.Key, err)
	}
	return manifests.Encode(p)
}

// DecodePin decodes the bytes of the pin under key strictly and checks
// that it belongs to layout's shard.
func DecodePin(layout shards.Layout, key string, body []byte) (Pin, error) {
	var p Pin
	if err := manifests.DecodeStrict(body, &p); err != nil {
		return Pin{}, fmt.Errorf("%w: %s: %w", ErrBadPin, key, err)
	}
	if p.Shard != layout.ID().String() {
		return Pin{}, fmt.Errorf("%w: %s: names shard %q, want %s", ErrBadPin, key, p.Shard, layout.ID())
	}
	h, err := digest.Parse(p.Root)
	if err != nil {
		return Pin{}, fmt.Errorf("%w: %s: root %q", ErrBadPin, key, p.Root)
	}
	p.Key, p.Name, p.RootHash = key, strings.TrimPrefix(key, layout.PinsPrefix()), h
	if err := p.check(); err != nil {
		return Pin{}, fmt.Errorf("%w: %s: %w", ErrBadPin, key, err)
	}
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

// ReadPin reads and decodes the pin called name; a missing one is
// ErrPinNotFound.
func ReadPin(ctx context.Context, b bucket.Bucket, layout shards.Layout, name string) (Pin, error) {
	key, err := layout.Pin(name)
	if err != nil {
		return Pin{}, err
	}
	body, _, err := b.Get(ctx, key)
	if errors.Is(err, bucket.ErrNotExist) {
		return Pin{}, fmt.Errorf("%w: %s", ErrPinNotFound, name)
	}
	if err != nil {
		return Pin{}, fmt.Errorf("gcsweep: read pin %s: %w", name, err)
	}
	return DecodePin(layout, key, body)
}
