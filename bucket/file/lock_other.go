//go:build !unix

package file

import (
	"errors"
	"fmt"
	"syscall"
)

func flock(path string, exclusive bool) (func(), error) {
	return nil, fmt.Errorf("lock %s: file locking is not available on this platform: %w", path, errors.ErrUnsupported)
}

func rmdir(dir string) error { return syscall.Rmdir(dir) }
