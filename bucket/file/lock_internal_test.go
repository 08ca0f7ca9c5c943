//go:build unix

package file

import (
	"context"
	"errors"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestLockFileExcludes: a lock file kept open excludes, exclusively, the
// goroutines that share it and the holders of another open file of the
// same path (as another process's is); readers of one lock file share it
// with each other and never with an exclusive holder of the other.
func TestLockFileExcludes(t *testing.T) {
	path := filepath.Join(t.TempDir(), "lock")
	open := func() (int, error) { return openLock(path) }
	var here, there lockFile // two processes' views of the one file
	defer here.close()
	defer there.close()

	var writers, readers atomic.Int32
	var overlapped atomic.Bool
	var sharedAtOnce atomic.Int32
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			l := &here
			if g%2 == 1 {
				l = &there
			}
			for i := range 300 {
				exclusive := g%4 < 2 || i%3 == 0
				unlock, err := l.hold(t.Context(), path, exclusive, open)
				if err != nil {
					t.Error(err)
					return
				}
				if exclusive {
					if writers.Add(1) != 1 || readers.Load() != 0 {
						overlapped.Store(true)
					}
					time.Sleep(50 * time.Microsecond) // room for another to try
					writers.Add(-1)
				} else {
					n := readers.Add(1)
					if writers.Load() != 0 {
						overlapped.Store(true)
					}
					for {
						m := sharedAtOnce.Load()
						if n <= m || sharedAtOnce.CompareAndSwap(m, n) {
							break
						}
					}
					time.Sleep(50 * time.Microsecond)
					readers.Add(-1)
				}
				unlock()
			}
		}()
	}
	wg.Wait()
	if overlapped.Load() {
		t.Fatal("an exclusive hold overlapped another hold")
	}
	t.Logf("at most %d readers at once", sharedAtOnce.Load())

	// Readers of here and of there hold together; an exclusive hold by
	// a third process waits for the last of them.
	var other lockFile
	defer other.close()
	var unlocks []func()
	for _, l := range []*lockFile{&there, &here, &here} {
		unlock, err := l.hold(t.Context(), path, false, open)
		if err != nil {
			t.Fatal(err)
		}
		unlocks = append(unlocks, unlock)
	}
	got := make(chan func())
	go func() {
		unlock, err := other.hold(t.Context(), path, true, open)
		if err != nil {
			t.Error(err)
		}
		got <- unlock
	}()
	granted := false
	for _, unlock := range unlocks {
		if !granted {
			select {
			case unlock := <-got:
				unlock()
				granted = true
				t.Error("an exclusive hold was granted beside readers")
			case <-time.After(20 * time.Millisecond):
			}
		}
		unlock()
	}
	if !granted {
		select {
		case unlock := <-got:
			unlock()
		case <-time.After(10 * time.Second):
			t.Fatal("the exclusive hold was not granted once the readers left")
		}
	}

	here.close()
	if _, err := here.hold(t.Context(), path, false, open); err == nil {
		t.Fatal("a closed lock file was held")
	}
}

// TestLockFileCloseDoesNotWait: closing a lock file returns while a hold
// waits for another process's lock (as behind a paused process); the
// hold, once granted, releases normally, and the file is closed then.
func TestLockFileCloseDoesNotWait(t *testing.T) {
	path := filepath.Join(t.TempDir(), "lock")
	open := func() (int, error) { return openLock(path) }
	var here, other lockFile
	defer other.close()
	release, err := other.hold(t.Context(), path, true, open)
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan func())
	go func() {
		unlock, err := here.hold(t.Context(), path, true, open)
		if err != nil {
			t.Error(err)
		}
		got <- unlock
	}()
	time.Sleep(20 * time.Millisecond) // let it reach the flock
	closed := make(chan struct{})
	go func() { here.close(); close(closed) }()
	select {
	case <-closed:
	case <-time.After(5 * time.Second):
		release()
		t.Fatal("close waited for a hold blocked on another process")
	}
	release()
	unlock := <-got
	if unlock == nil {
		t.Fatal("the waiting hold failed")
	}
	here.mu.Lock()
	opened := here.opened
	here.mu.Unlock()
	if !opened {
		t.Error("the file was closed under a granted hold")
	}
	unlock()
	here.mu.Lock()
	opened = here.opened
	here.mu.Unlock()
	if opened {
		t.Error("the file stayed open after the last hold of a closed lock file")
	}
	if _, err := here.hold(t.Context(), path, false, open); err == nil {
		t.Error("a hold after close was granted")
	}
}

// TestLockFileHoldEndsWithItsContext: a hold that waits for another
// process's lock gives up when its context ends, as a request's deadline
// passes behind a paused process; the lock is then free for the next.
func TestLockFileHoldEndsWithItsContext(t *testing.T) {
	path := filepath.Join(t.TempDir(), "lock")
	open := func() (int, error) { return openLock(path) }
	var here, other lockFile
	defer here.close()
	defer other.close()
	release, err := other.hold(t.Context(), path, true, open)
	if err != nil {
		t.Fatal(err)
	}
	for _, exclusive := range []bool{true, false} {
		ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
		done := make(chan error, 1)
		go func() {
			unlock, err := here.hold(ctx, path, exclusive, open)
			if err == nil {
				unlock()
			}
			done <- err
		}()
		select {
		case err := <-done:
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("exclusive %v: a hold behind another process's: %v, want the deadline", exclusive, err)
			}
		case <-time.After(10 * time.Second):
			release()
			t.Fatalf("exclusive %v: the hold outlived its context by 10 s", exclusive)
		}
		cancel()
	}
	release()
	unlock, err := here.hold(t.Context(), path, true, open)
	if err != nil {
		t.Fatal(err)
	}
	unlock()
}
