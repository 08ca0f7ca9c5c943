package gcsweep_test

import (
	"os"
	"testing"

	"github.com/cairnstore/cairn/workbench"
)

// TestMain runs the package's tests with member trees when
// CAIRN_TEST_MEMBER_TREES is 1, so that every sweep, pin and rollback
// test also walks commits whose members are trees.
func TestMain(m *testing.M) {
	if os.Getenv("CAIRN_TEST_MEMBER_TREES") == "1" {
		workbench.ForceMemberTrees(true)
	}
	os.Exit(m.Run())
}
