//go:build unix

package file

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"sync"
	"syscall"
	"time"
)

// lockFile is one lock file under .locks, opened by its first use and
// kept open until the bucket closes: opening and closing it around every
// hold was two of the four system calls a hold took, and a put takes two
// holds for each object it writes. flock(2) excludes other processes; rw
// excludes this one's goroutines, which share the one open file
// description and so are not excluded from each other by flock. A shared
// hold is one flock(LOCK_SH) for all of the process's readers at once,
// taken by the first and released by the last (share orders those
// transitions).
type lockFile struct {
	rw      sync.RWMutex
	share   sync.Mutex
	readers int // guarded by share

	mu     sync.Mutex // guards what follows
	fd     int
	opened bool
	closed bool
	users  int // holds, and holds waiting for the flock, using fd
}

// hold takes l, exclusively or shared, waiting for another process's
// hold no longer than ctx allows; open opens its file. The returned
// function releases it.
func (l *lockFile) hold(ctx context.Context, path string, exclusive bool, open func() (int, error)) (func(), error) {
	if exclusive {
		l.rw.Lock()
		fd, err := l.take(ctx, path, syscall.LOCK_EX, open)
		if err != nil {
			l.rw.Unlock()
			return nil, err
		}
		return func() {
			syscall.Flock(fd, syscall.LOCK_UN)
			l.done()
			l.rw.Unlock()
		}, nil
	}
	l.rw.RLock()
	l.share.Lock()
	defer l.share.Unlock()
	if l.readers == 0 {
		if _, err := l.take(ctx, path, syscall.LOCK_SH, open); err != nil {
			l.rw.RUnlock()
			return nil, err
		}
	}
	l.readers++
	return func() {
		l.share.Lock()
		l.readers--
		if l.readers == 0 {
			syscall.Flock(l.fd, syscall.LOCK_UN)
			l.done()
		}
		l.share.Unlock()
		l.rw.RUnlock()
	}, nil
}

// take uses l's file (use) and flocks it how; on failure it ends the use.
func (l *lockFile) take(ctx context.Context, path string, how int, open func() (int, error)) (int, error) {
	fd, err := l.use(path, open)
	if err != nil {
		return -1, err
	}
	if err := flock(ctx, fd, path, how); err != nil {
		l.done()
		return -1, err
	}
	return fd, nil
}

// use returns l's open file, opening it on first use, and counts a user
// of it until done.
func (l *lockFile) use(path string, open func() (int, error)) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return -1, fmt.Errorf("lock %s: bucket is closed: %w", path, fs.ErrClosed)
	}
	if !l.opened {
		fd, err := open()
		if err != nil {
			return -1, err
		}
		l.fd, l.opened = fd, true
	}
	l.users++
	return l.fd, nil
}

// done ends a use; the last after close closes the file.
func (l *lockFile) done() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.users--
	l.closeIfIdle()
}

// close makes later holds fail and closes l's file now if nothing uses
// it, else when the last use ends: it never waits, so that a bucket
// closes while a hold waits on another process (one paused, for
// instance).
func (l *lockFile) close() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.closed = true
	l.closeIfIdle()
}

func (l *lockFile) closeIfIdle() {
	if l.closed && l.opened && l.users == 0 {
		syscall.Close(l.fd)
		l.opened = false
	}
}

// openLock opens (creating) the lock file at path.
func openLock(path string) (int, error) {
	fd, err := syscall.Open(path, syscall.O_RDWR|syscall.O_CREAT|syscall.O_CLOEXEC, 0o644)
	if err != nil {
		return -1, &os.PathError{Op: "open", Path: path, Err: err}
	}
	return fd, nil
}

// flock takes the lock how on fd, trying again while another process
// holds it until ctx ends: a blocking flock cannot be cancelled, and a
// process paused while holding a lock would keep a request waiting past
// every deadline.
func flock(ctx context.Context, fd int, path string, how int) error {
	wait := 100 * time.Microsecond
	for {
		err := syscall.Flock(fd, how|syscall.LOCK_NB)
		switch {
		case err == nil:
			return nil
		case err == syscall.EINTR:
			continue
		case err != syscall.EWOULDBLOCK:
			return &os.PathError{Op: "flock", Path: path, Err: err}
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("lock %s: held by another process: %w", path, context.Cause(ctx))
		case <-t.C:
		}
		wait = min(2*wait, 20*time.Millisecond)
	}
}

// rmdir removes dir only if it is an empty directory.
func rmdir(dir string) error { return syscall.Rmdir(dir) }
