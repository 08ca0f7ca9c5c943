package workbench_test

import (
	"os"
	"testing"

	"github.com/cairnstore/cairn/workbench"
)

// TestMain runs the package's tests with member trees when
// CAIRN_TEST_MEMBER_TREES is 1: every commit then keeps its members in a
// tree (Options.MemberTrees), and every test of commits, restores, fsck
// and collection runs against that format too.
func TestMain(m *testing.M) {
	if os.Getenv("CAIRN_TEST_MEMBER_TREES") == "1" {
		workbench.ForceMemberTrees(true)
	}
	os.Exit(m.Run())
}
