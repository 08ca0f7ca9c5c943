package gcsweep_test

import (
	"fmt"
	"os"
	"testing"

	"github.com/cairnstore/cairn/workbench"
)

// TestMain runs the package's tests against shards of an older value
// format when CAIRN_TEST_VALUE_FORMAT names one: with 2 every commit
// keeps its members in rows, with 3 in a member tree under flat
// digests, as the stores a cairn of that format wrote do, and the tests
// of commits, restores, fsck, collection and sweeps run against that
// format too.
func TestMain(m *testing.M) {
	if err := workbench.ValueFormatFromEnvForTest(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	os.Exit(m.Run())
}
