package shards_test

import (
	"bytes"
	"encoding/hex"
	"errors"
	"strings"
	"testing"

	"github.com/cairnstore/cairn/bucket/digest"
	"github.com/cairnstore/cairn/shards"
)

// Every binary format refuses a version it does not read with
// ErrFormatVersion, saying whether the bytes are older or newer than what
// it reads (docs/engine.md, 2.8).
func TestDecodersRefuseOtherFormatVersions(t *testing.T) {
	index, _ := hex.DecodeString(goldenIndex)
	delta, _ := hex.DecodeString(goldenDelta)
	decoders := []struct {
		name    string
		golden  []byte
		current byte
		decode  func(b []byte) error
	}{
		{"shard object", goldenBytes(t), shards.ObjectFormat, func(b []byte) error {
			_, err := shards.Decode(schema, b, digest.Sum(b))
			return err
		}},
		{"page index", index, shards.IndexFormat, func(b []byte) error {
			_, err := shards.DecodeIndex(schema, b, digest.Sum(b), shards.System, 0x3a)
			return err
		}},
		{"delta segment", delta, shards.DeltaFormat, func(b []byte) error {
			_, err := shards.DecodeDelta(schema, b, digest.Sum(b))
			return err
		}},
	}
	for _, d := range decoders {
		if err := d.decode(d.golden); err != nil {
			t.Fatalf("%s: the golden bytes: %v", d.name, err)
		}
		for _, c := range []struct {
			version byte
			says    string
		}{{d.current + 1, "newer"}, {d.current - 1, "older"}} {
			b := bytes.Clone(d.golden)
			b[4] = c.version
			err := d.decode(b)
			if !errors.Is(err, shards.ErrFormatVersion) || !errors.Is(err, shards.ErrMalformedObject) || !strings.Contains(err.Error(), c.says) {
				t.Errorf("%s version %d: %v, want ErrFormatVersion saying %q", d.name, c.version, err, c.says)
			}
		}
	}
}
