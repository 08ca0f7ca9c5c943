package shards

import (
	"errors"
	"fmt"
	"sync"

	"github.com/cairnstore/cairn/bucket/wire"
	"github.com/klauspost/compress/zstd"
)

// A compressed object holds another object's bytes (a shard object, a
// delta segment, a member-tree node) as one zstd frame:
//
//	magic "CRNZ" | version u8 (1) | uvarint length of the bytes within | zstd frame
//
// Its name is the SHA-256 of these bytes, as for any object, and a
// reference's size is their length. Readers expand it and decode the
// bytes within by their own magic and version; a writer keeps an object
// plain when compressing would not make it smaller, so a reader meets
// both.
const (
	compressedMagic = "CRNZ"
	// CompressedFormat is the version byte of a compressed object.
	CompressedFormat = 1
	// MaxExpandedBytes bounds the bytes a compressed object expands to.
	MaxExpandedBytes = 64 << 20
)

// ErrCompressed: a compressed object whose frame does not expand to the
// length it declares, or to more than MaxExpandedBytes. It is also
// ErrMalformedObject.
var ErrCompressed = fmt.Errorf("%w: bad compressed object", ErrMalformedObject)

var (
	zEncoder = sync.OnceValue(func() *zstd.Encoder {
		e, err := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedFastest), zstd.WithEncoderCRC(false))
		if err != nil {
			panic(err)
		}
		return e
	})
	zDecoder = sync.OnceValue(func() *zstd.Decoder {
		d, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(0), zstd.WithDecoderMaxMemory(MaxExpandedBytes))
		if err != nil {
			panic(err)
		}
		return d
	})
)

// Compress returns b as a compressed object, or b itself when that would
// not be smaller or b is longer than a reader expands
// (MaxExpandedBytes). The result is a function of b.
func Compress(b []byte) []byte {
	if len(b) > MaxExpandedBytes {
		return b
	}
	w := wire.NewWriter(make([]byte, 0, len(b)/2+16)).Raw([]byte(compressedMagic)).U8(CompressedFormat).UVarint(uint64(len(b)))
	out := zEncoder().EncodeAll(b, w.Bytes())
	if len(out) >= len(b) {
		return b
	}
	return out
}

// IsCompressed reports whether b is a compressed object (by its magic).
func IsCompressed(b []byte) bool {
	return len(b) >= len(compressedMagic) && string(b[:len(compressedMagic)]) == compressedMagic
}

// Expand returns the bytes within a compressed object, or b itself if b
// is not one. A compressed object of another version fails closed
// (ErrFormatVersion); one that does not expand to exactly the length it
// declares, or declares more than limit (at most MaxExpandedBytes), is
// ErrCompressed.
func Expand(b []byte, limit int64) ([]byte, error) {
	if !IsCompressed(b) {
		return b, nil
	}
	r := wire.NewReader(b)
	r.Take(len(compressedMagic))
	version := r.U8()
	n := r.UVarint()
	switch {
	case r.Err() != nil:
		return nil, fmt.Errorf("shards: compressed object: header: %w: %w", r.Err(), ErrCompressed)
	case version != CompressedFormat:
		return nil, fmt.Errorf("shards: %w: %w", VersionError("compressed object", uint64(version), CompressedFormat), ErrMalformedObject)
	case n == 0 || n > uint64(min(limit, MaxExpandedBytes)):
		return nil, fmt.Errorf("shards: compressed object of %d bytes within: %w", n, ErrCompressed)
	}
	frame := b[r.Offset():]
	out, err := zDecoder().DecodeAll(frame, make([]byte, 0, n))
	if err != nil && !errors.Is(err, zstd.ErrDecoderSizeExceeded) {
		return nil, fmt.Errorf("shards: compressed object: %w: %w", err, ErrCompressed)
	}
	if err != nil || uint64(len(out)) != n {
		return nil, fmt.Errorf("shards: compressed object expands to %d bytes or more, declares %d: %w", len(out), n, ErrCompressed)
	}
	return out, nil
}

// compressed returns the plain encoding b as a compressed object, or b
// when that would not be smaller; stored is the compressed length, or 0
// when b stays plain.
func compressed(b []byte) (_ []byte, stored int64) {
	z := Compress(b)
	if len(z) >= len(b) {
		return b, 0
	}
	return z, int64(len(z))
}

// expandStored returns the plain bytes of a stored object for its
// decoder, and the stored length to record beside them: len(b) when b is
// compressed, 0 when it is plain.
func expandStored(b []byte, what string) (_ []byte, stored int64, err error) {
	raw, err := Expand(b, MaxExpandedBytes)
	if err != nil {
		return nil, 0, fmt.Errorf("shards: decode %s: %w", what, err)
	}
	if len(raw) == len(b) {
		return raw, 0, nil
	}
	return raw, int64(len(b)), nil
}
