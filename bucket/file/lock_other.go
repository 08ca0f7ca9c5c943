//go:build !unix

package file

import (
	"context"
	"errors"
	"fmt"
	"syscall"
)

type lockFile struct{}

func (l *lockFile) hold(_ context.Context, path string, exclusive bool, open func() (int, error)) (func(), error) {
	return nil, fmt.Errorf("lock %s: file locking is not available on this platform: %w", path, errors.ErrUnsupported)
}

func (l *lockFile) close() {}

func openLock(path string) (int, error) {
	return -1, fmt.Errorf("lock %s: file locking is not available on this platform: %w", path, errors.ErrUnsupported)
}

func rmdir(dir string) error { return syscall.Rmdir(dir) }
