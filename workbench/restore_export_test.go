package workbench

// SetRestoreHookForTest installs fn to run after each command of a
// restore of s lands ("prepare", "copy", "final"); an error stops the
// restore there, as a crash between its commands would. nil removes it.
func SetRestoreHookForTest(s *Service, fn func(step string) error) { s.restoreHook = fn }

// SetRestoreBatchForTest sets how many members one copy command places
// and returns a function that restores the default.
func SetRestoreBatchForTest(n int) func() {
	old := restoreBatch
	restoreBatch = n
	return func() { restoreBatch = old }
}
