//go:build unix

package file

import (
	"os"
	"syscall"
)

// flock opens the lock file at path, creating it if needed, and locks it
// exclusively or shared. Every call opens its own file description, so
// locks exclude each other within a process as well as across processes.
// The returned function releases the lock.
func flock(path string, exclusive bool) (func(), error) {
	how := syscall.LOCK_SH
	if exclusive {
		how = syscall.LOCK_EX
	}
	fd, err := syscall.Open(path, syscall.O_RDWR|syscall.O_CREAT|syscall.O_CLOEXEC, 0o644)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	for {
		err = syscall.Flock(fd, how)
		if err != syscall.EINTR {
			break
		}
	}
	if err != nil {
		syscall.Close(fd)
		return nil, &os.PathError{Op: "flock", Path: path, Err: err}
	}
	return func() {
		syscall.Flock(fd, syscall.LOCK_UN)
		syscall.Close(fd)
	}, nil
}

// rmdir removes dir only if it is an empty directory.
func rmdir(dir string) error { return syscall.Rmdir(dir) }
