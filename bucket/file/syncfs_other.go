//go:build !linux

package file

// fileSystemSync returns nil: only Linux offers syncfs(2), and the bucket
// syncs file by file.
func fileSystemSync() func(dir string) error { return nil }
