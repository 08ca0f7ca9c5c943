package workbench

import (
	"github.com/cairnstore/cairn/workbench/internal/history"
)

// SetChangesScanBatchForTest sets how many rows one change-feed scan call
// returns and returns a function that restores the default.
func SetChangesScanBatchForTest(n int) func() {
	old := history.ChangesScanBatch
	history.ChangesScanBatch = n
	return func() { history.ChangesScanBatch = old }
}
