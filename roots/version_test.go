package roots_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/cairnstore/cairn/bucket/digest"
	"github.com/cairnstore/cairn/roots"
	"github.com/cairnstore/cairn/shards"
)

// Tables and roots refuse a version they do not read with
// shards.ErrFormatVersion, saying whether it is older or newer.
func TestDecodersRefuseOtherFormatVersions(t *testing.T) {
	for _, d := range []struct {
		name    string
		golden  string
		current byte
		older   byte // the newest version it refuses as older
		decode  func(b []byte) error
	}{
		{"table", goldenTable, roots.TableFormat, roots.TableFormatV3 - 1, func(b []byte) error {
			_, err := roots.DecodeTable(schema, b, digest.Sum(b))
			return err
		}},
		{"root", goldenRoot, roots.RootFormat, roots.RootFormat - 1, func(b []byte) error {
			_, err := roots.DecodeRoot(schema, b, digest.Sum(b))
			return err
		}},
	} {
		for _, c := range []struct {
			version byte
			says    string
		}{{d.current + 1, "newer"}, {d.older, "older"}} {
			b := unhex(t, d.golden)
			if err := d.decode(b); err != nil {
				t.Fatalf("%s: the golden bytes: %v", d.name, err)
			}
			b[4] = c.version
			err := d.decode(b)
			if !errors.Is(err, shards.ErrFormatVersion) || !errors.Is(err, roots.ErrMalformed) || !strings.Contains(err.Error(), c.says) {
				t.Errorf("%s version %d: %v, want ErrFormatVersion saying %q", d.name, c.version, err, c.says)
			}
		}
	}
}
