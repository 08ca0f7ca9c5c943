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

// PinFormat is the format member of every pin this version writes and
// reads.
const PinFormat = "cairn.pin.v1"

// MaxPinNote bounds a pin's note, in bytes.
const MaxPinNote = 1024

// Errors of pins, tested with errors.Is.
var (
	// ErrPinNotFound: no pin of that name. It is also bucket.ErrNotExist.
	ErrPinNotFound = fmt.Errorf("gcsweep: pin not found: %w", bucket.ErrNotExist)
	// ErrPinExists: a pin of that name exists already. Pins are never
	// replaced: delete the old one first.
	ErrPinExists = errors.New("gcsweep: pin exists")
	// ErrBadPin: a stored pin does not decode, or names another shard.
	// GC refuses to sweep past one: a pin it cannot read may keep data.
	ErrBadPin = errors.New("gcsweep: malformed pin")
)

// Pin is one backup pin: a name under the shard's pins/ prefix that keeps
// a committed root, and everything it reaches, from the sweep. A pin is
// written once (create-only) and never changed; deleting it lets GC
// reclaim what only it kept.
type Pin struct {
	Name     string
	Shard    shards.ShardID
	Sequence uint64      // the sequence of the pinned root
	Root     digest.Hash // the pinned root
	Created  time.Time   // millisecond precision
	Note     string
}

// pinDoc is a pin's stored form: canonical JSON, members sorted.
type pinDoc struct {
	Format    string `json:"format"`
	Shard     string `json:"shard"`
	Sequence  uint64 `json:"sequence"`
	Root      string `json:"root"`
	CreatedMs int64  `json:"created_unix_ms"`
	Note      string `json:"note"`
}

// check reports what makes p unstorable.
func (p Pin) check() error {
	switch {
	case p.Sequence == 0:
		return fmt.Errorf("%w: sequence 0", ErrBadPin)
	case p.Root.IsZero():
		return fmt.Errorf("%w: zero root", ErrBadPin)
	case len(p.Note) > MaxPinNote:
		return fmt.Errorf("%w: note of %d bytes, at most %d", ErrBadPin, len(p.Note), MaxPinNote)
	case !utf8.ValidString(p.Note):
		return fmt.Errorf("%w: note is not UTF-8", ErrBadPin)
	}
	return nil
}

// EncodePin returns the stored bytes of p (its name is its key, not part
// of its bytes).
func EncodePin(p Pin) ([]byte, error) {
	if err := p.check(); err != nil {
		return nil, err
	}
	return manifests.Encode(pinDoc{
		Format:    PinFormat,
		Shard:     p.Shard.String(),
		Sequence:  p.Sequence,
		Root:      p.Root.String(),
		CreatedMs: p.Created.UnixMilli(),
		Note:      p.Note,
	})
}

// DecodePin strictly decodes the pin called name of shard id: canonical
// JSON of exactly the members EncodePin writes, format PinFormat, naming
// shard id. Anything else is ErrBadPin.
func DecodePin(id shards.ShardID, name string, b []byte) (Pin, error) {
	var d pinDoc
	if err := manifests.DecodeStrict(b, &d); err != nil {
		return Pin{}, fmt.Errorf("%w: %s: %w", ErrBadPin, name, err)
	}
	if d.Format != PinFormat {
		return Pin{}, fmt.Errorf("%w: %s: format %q, want %q", ErrBadPin, name, d.Format, PinFormat)
	}
	if d.Shard != id.String() {
		return Pin{}, fmt.Errorf("%w: %s: names shard %q, want %s", ErrBadPin, name, d.Shard, id)
	}
	root, err := digest.Parse(d.Root)
	if err != nil {
		return Pin{}, fmt.Errorf("%w: %s: root: %w", ErrBadPin, name, err)
	}
	p := Pin{Name: name, Shard: id, Sequence: d.Sequence, Root: root, Created: time.UnixMilli(d.CreatedMs), Note: d.Note}
	if err := p.check(); err != nil {
		return Pin{}, fmt.Errorf("%s: %w", name, err)
	}
	return p, nil
}

// ListPins returns every pin of the layout's shard, by name. A pin that
// does not decode fails the listing (ErrBadPin): the sweep must not run
// past a pin it cannot read.
func ListPins(ctx context.Context, b bucket.Bucket, layout shards.Layout) ([]Pin, error) {
	objs, _, err := bucket.ListAll(ctx, b, bucket.ListOptions{Prefix: layout.PinsPrefix()})
	if err != nil {
		return nil, fmt.Errorf("gcsweep: list pins: %w", err)
	}
	pins := make([]Pin, 0, len(objs))
	for _, o := range objs {
		name := strings.TrimPrefix(o.Key, layout.PinsPrefix())
		p, err := ReadPin(ctx, b, layout, name)
		if errors.Is(err, ErrPinNotFound) {
			continue // deleted since the listing
		}
		if err != nil {
			return nil, err
		}
		pins = append(pins, p)
	}
	return pins, nil
}

// ReadPin reads and decodes the pin called name.
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
	return DecodePin(layout.ID(), name, body)
}
