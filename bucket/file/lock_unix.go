//go:build unix

package file

import (
	"fmt"
	"io/fs"
	"os"
	"sync"
	"syscall"
)

// lockFile is one lock file under .locks, opened by its first use and
// kept open until the bucket closes: opening and closing it around every
// hold was two of the five system calls a lock took, and a put takes
// two locks for each object it writes. flock(2) excludes other
// processes; rw excludes this one's goroutines, which share the one
// open file description and so are not excluded from each other by
// flock. A shared hold is one flock(LOCK_SH) for all of the process's
// readers at once, taken by the first and released by the last.
type lockFile struct {
	rw      sync.RWMutex
	mu      sync.Mutex // guards what follows
	fd      int
	opened  bool
	closed  bool
	readers int
}

// hold takes l, exclusively or shared; open opens its file. The returned
// function releases it.
func (l *lockFile) hold(path string, exclusive bool, open func() (int, error)) (func(), error) {
	if exclusive {
		l.rw.Lock()
		l.mu.Lock()
		fd, err := l.fdOf(path, open)
		l.mu.Unlock()
		if err == nil {
			err = flock(fd, path, syscall.LOCK_EX)
		}
		if err != nil {
			l.rw.Unlock()
			return nil, err
		}
		return func() {
			syscall.Flock(fd, syscall.LOCK_UN)
			l.rw.Unlock()
		}, nil
	}
	l.rw.RLock()
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.readers == 0 {
		fd, err := l.fdOf(path, open)
		if err == nil {
			err = flock(fd, path, syscall.LOCK_SH)
		}
		if err != nil {
			l.rw.RUnlock()
			return nil, err
		}
	}
	l.readers++
	return func() {
		l.mu.Lock()
		l.readers--
		if l.readers == 0 {
			syscall.Flock(l.fd, syscall.LOCK_UN)
		}
		l.mu.Unlock()
		l.rw.RUnlock()
	}, nil
}

// fdOf returns l's open file, opening it on first use. l.mu is held.
func (l *lockFile) fdOf(path string, open func() (int, error)) (int, error) {
	switch {
	case l.closed:
		return -1, fmt.Errorf("lock %s: bucket is closed: %w", path, fs.ErrClosed)
	case l.opened:
		return l.fd, nil
	}
	fd, err := open()
	if err != nil {
		return -1, err
	}
	l.fd, l.opened = fd, true
	return fd, nil
}

// close closes l's file once nothing holds it; later holds fail.
func (l *lockFile) close() {
	l.rw.Lock()
	defer l.rw.Unlock()
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.opened {
		syscall.Close(l.fd)
	}
	l.closed, l.opened = true, false
}

// openLock opens (creating) the lock file at path.
func openLock(path string) (int, error) {
	fd, err := syscall.Open(path, syscall.O_RDWR|syscall.O_CREAT|syscall.O_CLOEXEC, 0o644)
	if err != nil {
		return -1, &os.PathError{Op: "open", Path: path, Err: err}
	}
	return fd, nil
}

func flock(fd int, path string, how int) error {
	for {
		err := syscall.Flock(fd, how)
		if err == nil {
			return nil
		}
		if err != syscall.EINTR {
			return &os.PathError{Op: "flock", Path: path, Err: err}
		}
	}
}

// rmdir removes dir only if it is an empty directory.
func rmdir(dir string) error { return syscall.Rmdir(dir) }
