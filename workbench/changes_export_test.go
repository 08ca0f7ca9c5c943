package workbench

// SetChangesScanBatchForTest sets how many rows one change-feed scan call
// returns and returns a function that restores the default.
func SetChangesScanBatchForTest(n int) func() {
	old := changesScanBatch
	changesScanBatch = n
	return func() { changesScanBatch = old }
}
