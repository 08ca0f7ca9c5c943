package gcsweep_test

import (
	"os"
	"testing"

	"github.com/cairnstore/cairn/workbench"
)

// TestMain runs the package's tests against shards of the previous
// value format when CAIRN_TEST_VALUE_FORMAT is 2: every commit then
// keeps its members in rows, as the stores a cairn of that format wrote
// do, and the tests of commits, restores, fsck, collection and sweeps
// run against that format too.
func TestMain(m *testing.M) {
	if os.Getenv("CAIRN_TEST_VALUE_FORMAT") == "2" {
		workbench.PreviousValueFormatForTest(true)
	}
	os.Exit(m.Run())
}
